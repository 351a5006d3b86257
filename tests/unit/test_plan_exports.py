"""Plan exports (HCP's `plan-exports`, go-tfe's `PlanExports`): a finished plan's data as a Sentinel mock bundle,
written by the events worker, downloaded through a presigned URL, kept an hour; for whoever holds "Download Sentinel
mocks" (403 for a reader without it), NotFound for anyone else. The bundle's files are read back by an independent
Sentinel reader (`sentinel_reader.py`): each is valid Sentinel whose top-level names are its import's."""

from __future__ import annotations

import io
import json
import tarfile
from datetime import timedelta
from typing import Any

import pytest
from run_helpers import RunEnv, join, make_run_env
from sentinel_reader import read_module
from terrace.domain import clock
from terrace.domain.plan_json import redact
from terrace.domain.principal import PrincipalKind
from terrace.domain.sentinel_syntax import literal
from terrace.services.runs.plan_exports import EVENT

TRICKY = 'quote " backslash \\ newline \n tab \t unicode é ✓ nul \x00'
PLAN: dict[str, Any] = {
    "format_version": "1.2",
    "terraform_version": "1.11.0",
    "variables": {"name": {"value": TRICKY}},
    "planned_values": {
        "outputs": {"greeting": {"sensitive": False, "value": "hi"}},
        "root_module": {
            "resources": [
                {
                    "address": "null_resource.a[0]",
                    "mode": "managed",
                    "type": "null_resource",
                    "name": "a",
                    "index": 0,
                    "provider_name": "registry.terraform.io/hashicorp/null",
                    "values": {"triggers": {"k": TRICKY}, "n": 1.5, "big": 10**20},
                }
            ],
            "child_modules": [
                {
                    "address": "module.child",
                    "resources": [
                        {
                            "address": "module.child.null_resource.b",
                            "mode": "managed",
                            "type": "null_resource",
                            "name": "b",
                            "provider_name": "registry.terraform.io/hashicorp/null",
                            "values": {},
                        }
                    ],
                }
            ],
        },
    },
    "resource_changes": [
        {
            "address": "null_resource.a[0]",
            "mode": "managed",
            "type": "null_resource",
            "name": "a",
            "index": 0,
            "provider_name": "registry.terraform.io/hashicorp/null",
            "change": {
                "actions": ["create"],
                "before": None,
                "after": {"triggers": None},
                "after_unknown": {"id": True},
            },
        }
    ],
    "resource_drift": [
        {
            "address": "null_resource.d",
            "mode": "managed",
            "type": "null_resource",
            "name": "d",
            "change": {
                "actions": ["update"],
                "before": {"p": "drift-old-secret"},
                "after": {"p": "drift-new-secret"},
                "before_sensitive": {"p": True},
                "after_sensitive": {"p": True},
            },
        }
    ],
    "output_changes": {"greeting": {"actions": ["create"], "before": None, "after": "hi"}},
    "prior_state": {
        "format_version": "1.0",
        "terraform_version": "1.11.0",
        "values": {"outputs": {"old": {"sensitive": True, "value": "x"}}, "root_module": {}},
    },
    "configuration": {
        "provider_config": {"null": {"name": "null", "full_name": "registry.terraform.io/hashicorp/null"}},
        "root_module": {
            "resources": [
                {
                    "address": "null_resource.a",
                    "mode": "managed",
                    "type": "null_resource",
                    "name": "a",
                    "provider_config_key": "null",
                    "expressions": {"triggers": {"references": ["var.name"]}},
                    "count_expression": {"constant_value": 1},
                    "provisioners": [{"type": "local-exec", "expressions": {"command": {"constant_value": "true"}}}],
                }
            ],
            "variables": {"name": {"default": "n", "description": "a name"}},
            "outputs": {"greeting": {"expression": {"constant_value": "hi"}}},
            "module_calls": {
                "child": {
                    "source": "./child",
                    "module": {
                        "resources": [
                            {
                                "address": "null_resource.b",
                                "mode": "managed",
                                "type": "null_resource",
                                "name": "b",
                                "provider_config_key": "null",
                            }
                        ],
                        "variables": {"v": {}, "key": {"sensitive": True, "default": "default-secret"}},
                    },
                }
            },
        },
    },
}
IMPORTS = {
    "mock-tfplan-v2.sentinel": {
        "terraform_version", "variables", "planned_values", "resource_changes", "resource_drift", "output_changes",
        "raw",
    },
    "mock-tfconfig-v2.sentinel": {"providers", "resources", "provisioners", "variables", "outputs", "module_calls"},
    "mock-tfstate-v2.sentinel": {"terraform_version", "outputs", "resources", "raw"},
    "mock-tfrun.sentinel": {
        "id", "created_at", "created_by", "message", "commit_sha", "speculative", "is_destroy", "refresh",
        "refresh_only", "replace_addrs", "target_addrs", "variables", "organization", "project", "workspace",
        "cost_estimate",
    },
}  # fmt: skip


def finished_plan(env: RunEnv) -> tuple[str, str]:
    run = env.create_run(env.upload_config(), variables=[{"key": "name", "value": '"x"'}])
    spec = env.claim("r1")
    key = spec["plan_json_upload_url"].split("memory://blobs/")[1].split("?")[0]
    env.blobs.put(key, json.dumps(PLAN).encode())
    body: dict[str, Any] = {"runner_id": "r1", "status": "finished", "has_changes": True}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=body).status_code == 200
    return str(run["id"]), str(run["relationships"]["plan"]["data"]["id"])


def export_body(plan_id: str | None, data_type: str | None = "sentinel-mock-bundle-v0") -> dict[str, Any]:
    data: dict[str, Any] = {"type": "plan-exports", "attributes": {}}
    if data_type is not None:
        data["attributes"]["data-type"] = data_type
    if plan_id is not None:
        data["relationships"] = {"plan": {"data": {"type": "plans", "id": plan_id}}}
    return {"data": data}


def work_events(env: RunEnv) -> None:
    """The events worker: every published plan export request, handled."""
    publisher: Any = env.container.publisher
    pending = [e for e in publisher.events if e.get("type") == EVENT]
    publisher.events[:] = [e for e in publisher.events if e.get("type") != EVENT]
    for event in pending:
        env.container.events.handle(event)


@pytest.fixture(scope="module")
def exported() -> tuple[RunEnv, str, str]:
    env = make_run_env()
    _, plan_id = finished_plan(env)
    created = env.api("POST", "/plan-exports", export_body(plan_id))
    assert created.status_code == 201, created.text
    data = created.json()["data"]
    assert data["type"] == "plan-exports" and data["id"].startswith("pe-")
    assert data["attributes"]["data-type"] == "sentinel-mock-bundle-v0"
    assert data["attributes"]["status"] == "queued" and data["attributes"]["status-timestamps"]["queued-at"]
    work_events(env)
    return env, data["id"], plan_id


def bundle_of(env: RunEnv, export_id: str) -> dict[str, str]:
    answer = env.api("GET", f"/plan-exports/{export_id}/download", follow_redirects=False)
    assert answer.status_code == 302, answer.text
    key = answer.headers["location"].split("memory://blobs/")[1].split("?")[0]
    with tarfile.open(fileobj=io.BytesIO(env.blobs.get(key)), mode="r:gz") as tar:
        return {m.name: (tar.extractfile(m) or io.BytesIO()).read().decode() for m in tar.getmembers()}


def test_an_export_is_written_by_the_events_worker_and_read_back_finished(exported: tuple[RunEnv, str, str]) -> None:
    env, export_id, _ = exported
    read = env.api("GET", f"/plan-exports/{export_id}")
    assert read.status_code == 200, read.text
    attrs = read.json()["data"]["attributes"]
    assert attrs["status"] == "finished"
    assert set(attrs["status-timestamps"]) == {"queued-at", "finished-at"}


def test_each_mock_file_is_sentinel_whose_top_level_names_are_its_imports(exported: tuple[RunEnv, str, str]) -> None:
    env, export_id, _ = exported
    files = bundle_of(env, export_id)
    assert set(files) == {*IMPORTS, "sentinel.hcl"}
    for name, keys in IMPORTS.items():
        imports, values, functions = read_module(files[name])
        assert set(values) == keys, name
        if name == "mock-tfconfig-v2.sentinel":
            assert (imports, functions) == (["strings"], ["strip_index"])
    for name in IMPORTS:
        assert f'source = "{name}"' in files["sentinel.hcl"]


def test_the_mocks_hold_the_plans_data_keyed_as_the_imports_document(exported: tuple[RunEnv, str, str]) -> None:
    env, export_id, _ = exported
    files = bundle_of(env, export_id)
    plan = read_module(files["mock-tfplan-v2.sentinel"])[1]
    assert plan["raw"]["planned_values"] == PLAN["planned_values"]  # strings with every escape survive
    assert plan["variables"]["name"] == {"name": "name", "value": TRICKY}
    assert set(plan["planned_values"]["resources"]) == {"null_resource.a[0]", "module.child.null_resource.b"}
    assert plan["planned_values"]["resources"]["module.child.null_resource.b"]["module_address"] == "module.child"
    assert plan["resource_changes"]["null_resource.a[0]"]["change"]["actions"] == ["create"]
    config = read_module(files["mock-tfconfig-v2.sentinel"])[1]
    assert set(config["resources"]) == {"null_resource.a", "module.child.null_resource.b"}
    assert set(config["variables"]) == {"name", "module.child:v", "module.child:key"}
    assert config["provisioners"]["null_resource.a:0"]["type"] == "local-exec"
    assert config["module_calls"]["child"]["source"] == "./child"
    state = read_module(files["mock-tfstate-v2.sentinel"])[1]
    assert state["outputs"]["old"]["sensitive"] is True
    run = read_module(files["mock-tfrun.sentinel"])[1]
    assert run["organization"] == {"name": "acme"} and run["workspace"]["name"] == "app"
    assert run["variables"] == {"name": {"category": "terraform", "sensitive": False}}
    assert '"x"' not in files["mock-tfrun.sentinel"]  # a run variable's value is not in tfrun
    assert plan["resource_drift"]["null_resource.d"]["change"]["after"] == {"p": None}
    assert config["variables"]["module.child:key"]["default"] is None
    for secret in ("drift-old-secret", "drift-new-secret", "default-secret"):  # redacted, as json-output-redacted
        assert not any(secret in text for text in files.values()), secret


def test_an_export_expires_an_hour_after_it_finished(exported: tuple[RunEnv, str, str]) -> None:
    env, export_id, _ = exported
    later = clock.utcnow() + timedelta(hours=1, minutes=1)
    env.container.plan_exports._now = lambda: later
    try:
        attrs = env.api("GET", f"/plan-exports/{export_id}").json()["data"]["attributes"]
        assert attrs["status"] == "expired" and attrs["status-timestamps"]["expired-at"]
        assert env.api("GET", f"/plan-exports/{export_id}/download").status_code == 404
    finally:
        env.container.plan_exports._now = clock.utcnow


def test_bad_requests_are_422_or_404(exported: tuple[RunEnv, str, str]) -> None:
    env, _, plan_id = exported
    for body, status in (
        (export_body(None), 422),
        (export_body(plan_id, None), 422),
        (export_body(plan_id, "sentinel-mock-bundle-v9"), 422),
        (export_body("plan-doesnotexist"), 404),
        ({"data": "x"}, 422),
    ):
        answer = env.api("POST", "/plan-exports", body)
        assert answer.status_code == status, (body, answer.text)
        assert answer.json()["errors"]
    for path in ("/plan-exports/pe-doesnotexist", "/plan-exports/nonsense", "/plan-exports/pe-x/download"):
        assert env.api("GET", path).status_code == 404


def test_an_unwritten_export_is_not_downloadable_and_a_deleted_one_is_gone() -> None:
    env = make_run_env()
    _, plan_id = finished_plan(env)
    export_id = env.api("POST", "/plan-exports", export_body(plan_id)).json()["data"]["id"]
    assert env.api("GET", f"/plan-exports/{export_id}/download").status_code == 409
    work_events(env)
    key = f"plan-exports/{export_id}/sentinel-mocks.tar.gz"
    assert env.blobs.head(key) is not None
    assert env.api("DELETE", f"/plan-exports/{export_id}").status_code == 204
    assert env.blobs.head(key) is None
    assert env.api("GET", f"/plan-exports/{export_id}").status_code == 404
    assert env.api("DELETE", f"/plan-exports/{export_id}").status_code == 404


def test_only_who_may_read_the_plan_json_sees_an_export(exported: tuple[RunEnv, str, str]) -> None:
    env, export_id, plan_id = exported
    user = env.container.accounts.create_user("mallory", "mallory@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    for method, path in (
        ("GET", f"/plan-exports/{export_id}"),
        ("GET", f"/plan-exports/{export_id}/download"),
        ("DELETE", f"/plan-exports/{export_id}"),
    ):
        assert env.client.request(method, f"/api/v2{path}", headers=headers).status_code == 404, path
    answer = env.client.post("/api/v2/plan-exports", headers=headers, json=export_body(plan_id))
    assert answer.status_code == 404
    join(env, token, "mallory")  # a member of no team: no read of runs or state
    assert env.client.get(f"/api/v2/plan-exports/{export_id}", headers=headers).status_code == 404
    assert env.api("GET", f"/plan-exports/{export_id}").status_code == 200


def test_exports_need_the_download_sentinel_mocks_permission_custom_access_grants(
    exported: tuple[RunEnv, str, str],
) -> None:
    """HCP's "Download Sentinel mocks": a team that reads runs and state without it may neither create nor delete
    an export (403: it sees the workspace); custom access with `sentinel-mocks: read` may."""
    env, _, plan_id = exported
    user = env.container.accounts.create_user("sam", "sam@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    join(env, token, "sam")
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "mocks"}}})
    team_id = team.json()["data"]["id"]
    users = {"data": [{"type": "users", "id": "sam"}]}
    assert env.api("POST", f"/teams/{team_id}/relationships/users", users).status_code == 204
    rel = {"team": {"data": {"type": "teams", "id": team_id}},
           "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}  # fmt: skip
    attrs = {"access": "custom", "runs": "read", "state-versions": "read", "sentinel-mocks": "none"}
    grant = env.api("POST", "/team-workspaces", {"data": {"type": "team-workspaces", "attributes": attrs,
                                                         "relationships": rel}})  # fmt: skip
    assert grant.status_code == 201, grant.text
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    owners = env.api("POST", "/plan-exports", export_body(plan_id)).json()["data"]["id"]
    assert env.client.post("/api/v2/plan-exports", headers=headers, json=export_body(plan_id)).status_code == 403
    assert env.client.delete(f"/api/v2/plan-exports/{owners}", headers=headers).status_code == 403
    assert env.client.get(f"/api/v2/plan-exports/{owners}", headers=headers).status_code == 403
    patch = {"data": {"type": "team-workspaces", "attributes": {"sentinel-mocks": "read"}}}
    assert env.api("PATCH", f"/team-workspaces/{grant.json()['data']['id']}", patch).status_code == 200
    mine = env.client.post("/api/v2/plan-exports", headers=headers, json=export_body(plan_id))
    assert mine.status_code == 201, mine.text
    assert env.client.delete(f"/api/v2/plan-exports/{owners}", headers=headers).status_code == 204
    assert env.client.delete(f"/api/v2/plan-exports/{mine.json()['data']['id']}", headers=headers).status_code == 204


def test_a_float_sentinel_cannot_write_is_undefined() -> None:
    assert literal(float("nan")) == "undefined" and literal({"b": 1, "a": [True, None]}).index('"a"') < 10


def test_a_workspaces_deletion_deletes_its_runs_exports_and_their_bundles() -> None:
    env = make_run_env()
    _, plan_id = finished_plan(env)
    export_id = env.api("POST", "/plan-exports", export_body(plan_id)).json()["data"]["id"]
    work_events(env)
    key = f"plan-exports/{export_id}/sentinel-mocks.tar.gz"
    assert env.blobs.head(key) is not None
    assert env.api("DELETE", f"/workspaces/{env.workspace_id}").status_code == 204
    assert env.blobs.head(key) is None
    assert env.container.table.get(export_id, "plan-export") is None


def test_the_redacted_plan_json_hides_drifts_sensitive_values_and_sensitive_defaults() -> None:
    """What json-output-redacted serves and the mocks are written from: drift is redacted as changes are."""
    redacted = redact(json.loads(json.dumps(PLAN)))
    assert redacted["resource_drift"][0]["change"]["before"] == {"p": None}
    child = redacted["configuration"]["root_module"]["module_calls"]["child"]["module"]
    assert child["variables"]["key"]["default"] is None and child["variables"]["v"] == {}


def test_the_reapers_sweep_deletes_a_bundle_once_its_export_expired() -> None:
    env = make_run_env()
    _, plan_id = finished_plan(env)
    export_id = env.api("POST", "/plan-exports", export_body(plan_id)).json()["data"]["id"]
    work_events(env)
    key = f"plan-exports/{export_id}/sentinel-mocks.tar.gz"
    service = env.container.plan_exports
    assert service.sweep_if_due() is None and env.blobs.head(key) is not None  # not yet expired
    later = clock.utcnow() + timedelta(hours=1, seconds=1)
    service._now = lambda: later
    env.container.reaper.reap_once()  # the sweep is one of the reaper's
    assert env.blobs.head(key) is None
    assert service.sweep_if_due() is None  # swept once
    assert env.api("GET", f"/plan-exports/{export_id}").json()["data"]["attributes"]["status"] == "expired"
    assert env.api("DELETE", f"/plan-exports/{export_id}").status_code == 204


def test_an_export_of_a_plan_json_above_the_limit_errors_with_its_reason() -> None:
    env = make_run_env()
    _, plan_id = finished_plan(env)
    env.container.plan_exports._json_max = 10
    export_id = env.api("POST", "/plan-exports", export_body(plan_id)).json()["data"]["id"]
    work_events(env)
    attrs = env.api("GET", f"/plan-exports/{export_id}").json()["data"]["attributes"]
    assert attrs["status"] == "errored" and attrs["status-timestamps"]["errored-at"]
    assert "exports are written of up to 10" in (
        env.container.run_store.plan_exports.get(export_id).error_message or ""
    )
    assert env.api("GET", f"/plan-exports/{export_id}/download").status_code == 409
    assert env.blobs.head(f"plan-exports/{export_id}/sentinel-mocks.tar.gz") is None
