"""The explorer through the in-process API: workspaces whose applied configurations call a module and require
providers at different versions, on different terraform versions, one with a state; the explorer answers "which
workspaces use module X at a version below Y" and "which run terraform 1.3", counts terraform versions, exports
the same rows as CSV, and shows a reader of one workspace that workspace only."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from run_helpers import RunEnv, join, make_run_env, tarball
from state_helpers import state_bytes, sv_body
from table_writes import spy_writes
from terrace.bootstrap import build_memory
from terrace.domain.errors import Invalid
from terrace.domain.explorer import Use, module_name
from terrace.domain.explorer_config import configuration_uses, json_blocks
from terrace.domain.explorer_query import parse
from terrace.domain.principal import Principal, PrincipalKind
from terrace.web.ui.session import COOKIE

VPC = "terraform-aws-modules/vpc/aws"
LOCK = """provider "example.com/hashicorp/aws" {{
  version     = "{version}"
  constraints = "~> {major}.0"
  hashes = ["h1:abc"]
}}
"""


def _main_tf(vpc_version: str, aws_major: int) -> str:
    return f"""terraform {{
  required_providers {{
    aws = {{ source = "hashicorp/aws", version = "~> {aws_major}.0" }}
  }}
}}
module "network" {{
  source  = "{VPC}"
  version = "{vpc_version}"
}}
module "tags" {{ source = "./modules/tags" }}
"""


def _drain(env: RunEnv) -> None:
    published = env.container.publisher.events  # type: ignore[attr-defined]
    while published:
        env.container.events.handle(published.pop(0))


def _workspace(env: RunEnv, name: str, terraform_version: str, files: dict[str, str]) -> str:
    """A remote workspace whose one run applied a configuration of `files`."""
    attrs = {"name": name, "execution-mode": "remote", "terraform-version": terraform_version}
    made = env.api("POST", "/organizations/acme/workspaces", {"data": {"type": "workspaces", "attributes": attrs}})
    assert made.status_code == 201, made.text
    ws_id = str(made.json()["data"]["id"])
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
    cv = env.api("POST", f"/workspaces/{ws_id}/configuration-versions", body).json()["data"]
    env.land(cv["attributes"]["upload-url"].split("memory://blobs/")[1].split("?")[0], tarball(files))
    env.create_run(cv["id"], ws_id, **{"auto-apply": True})
    env.work_next()  # plan
    env.work_next()  # apply
    _drain(env)
    return ws_id


@pytest.fixture(scope="module")
def env() -> RunEnv:
    env = make_run_env()
    _workspace(env, "net-old", "1.3.9", {"main.tf": _main_tf("3.19.0", 4), ".terraform.lock.hcl":
               LOCK.format(version="4.67.0", major=4)})  # fmt: skip
    _workspace(env, "net-new", "1.9.5", {"main.tf": _main_tf("5.1.2", 5), ".terraform.lock.hcl":
               LOCK.format(version="5.31.0", major=5)})  # fmt: skip
    legacy = {"module": {"vpc": {"source": VPC, "version": "4.0.2"}}, "terraform": {"required_version": ">= 1.3"}}
    legacy_id = _workspace(env, "legacy", "1.3.2", {"main.tf.json": json.dumps(legacy)})
    # legacy's state: written by terraform 1.3.2, its resources of the random provider
    lock = env.api("POST", f"/workspaces/{legacy_id}/actions/lock", {"reason": "state"})
    assert lock.status_code == 200, lock.text
    resource = {"mode": "managed", "type": "random_id", "name": "x",
                "provider": 'provider["example.com/hashicorp/random"]',
                "instances": [{"schema_version": 0, "attributes": {"id": "abc"}}]}  # fmt: skip
    raw = state_bytes(1, resources=[resource]).replace(b'"1.0.3"', b'"1.3.2"')
    pushed = env.api("POST", f"/workspaces/{legacy_id}/state-versions", sv_body(raw, 1))
    assert pushed.status_code == 201, pushed.text
    env.api("POST", f"/workspaces/{legacy_id}/actions/unlock")
    _drain(env)
    return env


def _explore(env: RunEnv, query: str, headers: dict[str, str] | None = None) -> Any:
    response = env.client.get(f"/api/v2/organizations/acme/explorer?{query}", headers=headers or env.headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_which_workspaces_use_module_x_below_version_y(env):
    found = _explore(env, f"type=modules&filter[0][source][is][0]={VPC}&filter[1][version][lt][0]=5.0.0&sort=version")
    assert [(m["attributes"]["name"], m["attributes"]["version"], m["attributes"]["workspaces"])
            for m in found["data"]] == [("vpc", "3.19.0", "net-old"), ("vpc", "4.0.2", "legacy")]  # fmt: skip
    assert {m["type"] for m in found["data"]} == {"visibility-module"}
    every = _explore(env, "type=modules&sort=-workspace_count,source")["data"]
    assert ("./modules/tags", 2) in [(m["attributes"]["source"], m["attributes"]["workspace-count"]) for m in every]


def test_which_workspaces_run_terraform_1_3_and_their_counts(env):
    rows = _explore(env, "type=workspaces&filter[0][workspace_terraform_version][contains][0]=1.3.&sort=workspace_name")
    assert [r["attributes"]["workspace-name"] for r in rows["data"]] == ["legacy", "net-old"]
    versions = _explore(env, "type=tf_versions&sort=-version")["data"]
    assert [(v["attributes"]["version"], v["attributes"]["workspace-count"]) for v in versions] == [
        ("1.9.5", 1), ("1.3.9", 1), ("1.3.2", 1), ("latest", 1)]  # fmt: skip
    older = _explore(env, "type=tf_versions&filter[0][version][lt][0]=1.4")["data"]
    assert sorted(v["attributes"]["version"] for v in older) == ["1.3.2", "1.3.9"]


def test_a_workspace_row_joins_its_run_state_and_configuration(env):
    rows = {r["attributes"]["workspace-name"]: r for r in _explore(env, "type=workspaces")["data"]}
    old, legacy = rows["net-old"], rows["legacy"]
    assert old["type"] == "visibility-workspace" and old["id"].startswith("ws-")
    attrs = old["attributes"]
    assert attrs["current-run-status"] == "applied" and attrs["project-name"] == "Default Project"
    assert attrs["modules"] == f"./modules/tags, {VPC}:3.19.0" and attrs["module-count"] == 2
    assert attrs["providers"] == "hashicorp/aws:4.67.0" and attrs["provider-count"] == 1  # the lock file's version
    assert legacy["attributes"]["state-version-terraform-version"] == "1.3.2"
    assert legacy["attributes"]["providers"] == "hashicorp/random" and legacy["attributes"]["resource-count"] == 1
    providers = _explore(env, "type=providers&filter[0][name][is][0]=aws&sort=version")["data"]
    assert [(p["attributes"]["version"], p["attributes"]["workspaces"]) for p in providers] == [
        ("4.67.0", "net-old"), ("5.31.0", "net-new")]  # fmt: skip
    some = _explore(env, "type=workspaces&fields=workspace_name,drifted&page[size]=2&sort=-workspace_name")
    assert [r["attributes"] for r in some["data"]] == [{"workspace-name": "net-old", "drifted": None},
                                                        {"workspace-name": "net-new", "drifted": None}]  # fmt: skip
    assert some["meta"]["pagination"]["total-count"] == 4 and some["meta"]["pagination"]["next-page"] == 2


def test_the_csv_export_holds_the_same_rows(env):
    query = "type=workspaces&fields=workspace_name,workspace_terraform_version,modules&sort=workspace_name"
    exported = env.client.get(f"/api/v2/organizations/acme/explorer/export/csv?{query}", headers=env.headers)
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
    assert "attachment" in exported.headers["content-disposition"]
    table = list(csv.reader(io.StringIO(exported.text)))
    api = [r["attributes"] for r in _explore(env, query)["data"]]
    assert table[0] == ["workspace_name", "workspace_terraform_version", "modules"]
    assert table[1:] == [[a["workspace-name"], a["workspace-terraform-version"], a["modules"] or ""] for a in api]


@pytest.mark.parametrize(
    "query",
    [
        "",
        "type=nodes",
        "type=workspaces&sort=nope",
        "type=workspaces&fields=workspace_name,secret",
        "type=workspaces&filter[0][workspace_name][like][0]=x",
        "type=workspaces&filter[0][resource_count][gt][0]=many",
        "type=workspaces&filter[0][workspace_name][gt][0]=a",
        "type=workspaces&filter[0][workspace_updated_at][is_before][0]=yesterday",
        "type=modules&filter[0][version][lt][0]=latest",
        "type=workspaces&filter[x][workspace_name][is][0]=a",
    ],
)
def test_a_bad_query_is_a_400_naming_it(env, query):
    for path in ("explorer", "explorer/export/csv"):
        response = env.client.get(f"/api/v2/organizations/acme/{path}?{query}", headers=env.headers)
        assert response.status_code == 400, response.text
        assert response.json()["errors"][0]["status"] == "400"


def test_a_reader_of_one_workspace_sees_only_it(env):
    ws_id = env.container.workspaces.find_id("acme", "net-new")
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "nets"}}})
    team_id = team.json()["data"]["id"]
    rel = {"team": {"data": {"type": "teams", "id": team_id}}, "workspace": {"data": {"type": "workspaces",
           "id": ws_id}}}  # fmt: skip
    grant = {"data": {"type": "team-workspaces", "attributes": {"access": "read"}, "relationships": rel}}
    assert env.api("POST", "/team-workspaces", grant).status_code == 201
    user = env.container.accounts.create_user("rita", "rita@example.com")
    secret = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    join(env, secret, "rita")
    added = env.api("POST", f"/teams/{team_id}/relationships/users", {"data": [{"type": "users", "id": "rita"}]})
    assert added.status_code == 204, added.text
    headers = {"Authorization": f"Bearer {secret}"}
    rows = _explore(env, "type=workspaces", headers)["data"]
    assert [r["attributes"]["workspace-name"] for r in rows] == ["net-new"]
    modules = _explore(env, "type=modules", headers)["data"]
    assert {m["attributes"]["workspaces"] for m in modules} == {"net-new"}
    versions = _explore(env, "type=tf_versions", headers)["data"]
    assert [(v["attributes"]["version"], v["attributes"]["workspace-count"]) for v in versions] == [("1.9.5", 1)]
    stranger = env.container.accounts.issue_token(PrincipalKind.USER, env.container.accounts.create_user(
        "sam", "sam@example.com").id).secret  # fmt: skip
    hidden = env.client.get("/api/v2/organizations/acme/explorer?type=workspaces",
                            headers={"Authorization": f"Bearer {stranger}"})  # fmt: skip
    assert hidden.status_code == 404


def test_deleting_a_workspace_deletes_its_summary(env):
    store = env.container.explorer_store
    org_key = env.container.workspaces.load(env.workspace_id).organization
    made = _workspace(env, "short-lived", "1.9.5", {"main.tf": _main_tf("5.1.2", 5)})
    assert store.summary(org_key, made) is not None
    assert env.api("DELETE", f"/workspaces/{made}").status_code in (200, 204)
    assert store.summary(org_key, made) is None


def test_explorer_reads_never_write(env, monkeypatch):
    writes = spy_writes(env.container.table, monkeypatch)
    published: list[Any] = []
    monkeypatch.setattr(env.container.publisher, "publish", lambda event, *a, **k: published.append(event))
    for view in ("workspaces", "tf_versions", "providers", "modules"):
        _explore(env, f"type={view}&sort=-workspace_count" if view != "workspaces" else f"type={view}")
        assert env.client.get(f"/api/v2/organizations/acme/explorer/export/csv?type={view}",
                              headers=env.headers).status_code == 200  # fmt: skip
    assert writes == [] and published == []


# what a configuration says, read from its documents -------------------------------------------------------
def test_module_names_and_versions_from_every_kind_of_source():
    assert module_name(VPC) == "vpc" and module_name(f"app.terraform.example/{VPC}") == "vpc"
    assert module_name("git::https://example.com/org/network.git?ref=v1.2.0") == "network"
    assert module_name("./modules/tags") == "tags" and module_name("github.com/org/repo//sub") == "repo"
    documents = {
        "main.tf.json": json_blocks({"module": {"a": {"source": "git::https://example.com/x.git?ref=v2.0.0"}},
                                     "terraform": {"required_providers": {"null": {"source": "hashicorp/null"}}}}),
        "legacy.tf": {"terraform": [{"required_providers": [{"google": '"~> 3.0"', "__is_block__": True}]}]},
    }  # fmt: skip
    modules, providers = configuration_uses(documents)
    assert modules == (Use("x", "git::https://example.com/x.git?ref=v2.0.0", "v2.0.0", "v2.0.0"),)
    assert providers == (Use("google", "hashicorp/google", "~> 3.0", "~> 3.0"), Use("null", "hashicorp/null", ""))


def test_version_filters_compare_numbers_not_text():
    rows = [{"id": str(n), "version": v} for n, v in enumerate(["1.10.0", "1.9.5", "~> 1.2", "latest", ""])]
    query = parse([("type", "tf_versions"), ("filter[0][version][gteq][0]", "1.9"), ("sort", "-version")])
    assert [r["version"] for r in query.apply(rows)] == ["1.10.0", "1.9.5"]
    assert [r["version"] for r in parse([("type", "tf_versions"), ("sort", "version")]).apply(rows)] == [
        "~> 1.2", "1.9.5", "1.10.0", "latest", ""]  # fmt: skip
    empty = parse([("type", "tf_versions"), ("filter[0][version][is_empty][0]", "")])
    assert [r["id"] for r in empty.apply(rows)] == ["4"]


# change requests ------------------------------------------------------------------------------------------
def _bulk(env: RunEnv, attributes: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    body = {"data": {"type": "bulk-actions", "attributes": attributes}}
    url = "/api/v2/organizations/acme/explorer/bulk-actions"
    return env.client.post(url, json=body, headers=headers or env.headers)


def _reader(env: RunEnv, name: str, workspace: str) -> dict[str, str]:
    """A member whose one team reads `workspace` only."""
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": name}}})
    team_id = team.json()["data"]["id"]
    ws_id = env.container.workspaces.find_id("acme", workspace)
    rel = {"team": {"data": {"type": "teams", "id": team_id}}, "workspace": {"data": {"type": "workspaces",
           "id": ws_id}}}  # fmt: skip
    grant = {"data": {"type": "team-workspaces", "attributes": {"access": "read"}, "relationships": rel}}
    assert env.api("POST", "/team-workspaces", grant).status_code == 201
    user = env.container.accounts.create_user(name, f"{name}@example.com")
    secret = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    join(env, secret, name)
    added = env.api("POST", f"/teams/{team_id}/relationships/users", {"data": [{"type": "users", "id": name}]})
    assert added.status_code == 204, added.text
    return {"Authorization": f"Bearer {secret}", "Content-Type": "application/vnd.api+json"}


def test_a_change_request_lands_on_every_workspace_the_query_finds_until_archived(env):
    query = {"type": "workspaces", "filter": [{"workspace_terraform_version": {"contains": ["1.3."]}}]}
    inputs = {"subject": "Upgrade to terraform 1.9", "message": "1.3 is out of support."}
    made = _bulk(env, {"action_type": "change_request", "action_inputs": inputs, "query": query})
    assert made.status_code == 201, made.text
    assert made.json()["data"]["attributes"]["workspace_count"] == 2
    legacy = env.container.workspaces.find_id("acme", "legacy")
    listed = env.api("GET", f"/workspaces/{legacy}/change-requests").json()["data"]
    (request,) = [cr for cr in listed if cr["attributes"]["subject"] == "Upgrade to terraform 1.9"]
    assert request["type"] == "workspace-change-requests" and request["attributes"]["archived-at"] is None
    assert request["relationships"]["workspace"]["data"]["id"] == legacy
    cookie, _ = env.container.web_sessions.sign_in(env.headers["Authorization"].split()[1])
    browser = TestClient(env.client.app)
    browser.cookies.set(COOKIE, cookie)
    page = browser.get("/app/acme/workspaces/legacy")
    assert page.status_code == 200 and "Upgrade to terraform 1.9" in page.text

    reader = _reader(env, "cr-reader", "legacy")  # reads legacy: sees the request, may neither make nor archive one
    assert env.client.get(f"/api/v2/workspaces/change-requests/{request['id']}", headers=reader).status_code == 200
    assert env.client.post(f"/api/v2/workspaces/change-requests/{request['id']}", headers=reader).status_code == 403
    refused = _bulk(env, {"action_type": "change_request", "action_inputs": inputs, "query": query}, reader)
    assert refused.status_code == 403
    net_new = env.container.workspaces.find_id("acme", "net-new")
    assert env.client.get(f"/api/v2/workspaces/{net_new}/change-requests", headers=reader).status_code == 404

    archived = env.api("POST", f"/workspaces/change-requests/{request['id']}")
    assert archived.status_code == 200 and archived.json()["data"]["attributes"]["archived-at"]
    page = browser.get("/app/acme/workspaces/legacy")
    assert "Upgrade to terraform 1.9" not in page.text  # shown until archived


@pytest.mark.parametrize(
    ("attributes", "status"),
    [
        ({"action_type": "delete_everything", "action_inputs": {"subject": "x"}}, 422),
        ({"action_type": "change_request", "action_inputs": {"subject": ""}}, 422),
        ({"action_type": "change_request", "action_inputs": {"subject": "x" * 201}}, 422),
        ({"action_type": "change_request", "action_inputs": {"subject": "x"}, "query": {"type": "modules"}}, 422),
        ({"action_type": "change_request", "action_inputs": {"subject": "x"}, "query": 7}, 400),
        (
            {
                "action_type": "change_request",
                "action_inputs": {"subject": "x"},
                "query": {"type": "workspaces", "filter": [{"nope": {"is": ["a"]}}]},
            },
            400,
        ),
    ],
)
def test_a_bad_bulk_action_is_refused_and_makes_nothing(env, attributes, status):
    requests = env.container.workspace_store.change_requests
    org_key = env.container.workspaces.load(env.workspace_id).organization
    ids = [ws.id for ws in env.container.workspaces.all_in(org_key)]
    before = sum(len(requests.of_workspace(ws_id)) for ws_id in ids)
    response = _bulk(env, attributes)
    assert response.status_code == status, response.text
    assert response.json()["errors"][0]["status"] == str(status)
    assert sum(len(requests.of_workspace(ws_id)) for ws_id in ids) == before


def test_the_feed_reads_the_working_directory_within_its_bounds(env):
    feed = env.container.explorer_feed
    module = {"module": {"m": {"source": "acme/network/aws", "version": "1.0.0"}}}
    files = {"main.tf.json": json.dumps({"module": {"root": {"source": "acme/root/aws"}}}),
             "infra/main.tf.json": json.dumps(module), "infra/deep.tf.json": "[" * 200_000,
             "infra/nested/x.tf.json": json.dumps({"module": {"n": {"source": "acme/nested/aws"}}})}  # fmt: skip
    modules, providers = feed.read_configuration(tarball(files), "/infra/")
    assert modules == (Use("network", "acme/network/aws", "1.0.0", "1.0.0"),) and providers == ()
    with pytest.raises(Invalid):  # not an archive: the run's event leaves the summary as it was
        feed.read_configuration(b"not a tarball", "")


def test_an_explorer_query_reads_the_same_whatever_the_number_of_workspaces(monkeypatch):
    """One organization read, the workspaces' names and items, their latest runs, assessments and summaries in
    batches: a few table calls for 2 workspaces or 12."""
    container = build_memory()
    user = container.accounts.create_user("alice", "alice@example.com")
    owner = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(owner, "acme", "ops@example.com")
    calls: list[str] = []
    for name in ("get", "query", "batch_get"):
        original = getattr(container.table, name)
        monkeypatch.setattr(
            container.table, name, lambda *a, _o=original, _n=name, **k: calls.append(_n) or _o(*a, **k)
        )

    def reads(count: int) -> list[str]:
        for n in range(len(container.workspaces.ids_in(container.organizations.lookup("acme").key)), count):
            ws = container.workspaces.create(owner, "acme", {"name": f"ws-{n}"})
            container.explorer_store.record_state(ws.organization, ws.id, f"sv-{n}", "1.9.5", ["hashicorp/aws"])
        calls.clear()
        rows = container.explorer.query(owner, "acme", parse([("type", "providers")]))
        assert rows[0]["workspace_count"] == count
        return sorted(calls)

    assert reads(2) == reads(12)
