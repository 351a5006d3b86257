"""Policies, policy sets and their parameters through the API as go-tfe calls it: shapes, Rego compiled at upload
(422 with the engine's message), the manage-policies organization access, and other organizations' as 404."""

from __future__ import annotations

from policy_helpers import DENY_NULL, call, create_policy, create_set, member
from run_helpers import make_run_env
from terrace.domain.principal import PrincipalKind


def test_policy_crud_upload_and_download() -> None:
    env = make_run_env()
    policy_id = create_policy(env, "no_null", rego=None, description="no null resources")
    read = env.api("GET", f"/policies/{policy_id}").json()["data"]
    assert read["type"] == "policies" and policy_id.startswith("pol-")
    attrs = read["attributes"]
    assert attrs["kind"] == "opa" and attrs["query"] == "data.terraform.policies.no_null.deny"
    assert attrs["enforcement-level"] == "mandatory" and attrs["enforce"] == [] and attrs["policy-set-count"] == 0
    assert read["relationships"]["organization"]["data"] == {"type": "organizations", "id": "acme"}
    assert env.api("GET", f"/policies/{policy_id}/download").status_code == 404  # nothing uploaded yet
    text = DENY_NULL.replace("no_null", "no_null")
    assert env.client.put(f"/api/v2/policies/{policy_id}/upload", content=text, headers=env.headers).status_code == 200
    assert env.api("GET", f"/policies/{policy_id}/download").text == text
    enforce = env.api("GET", f"/policies/{policy_id}").json()["data"]["attributes"]["enforce"]
    assert enforce == [{"path": "no_null.rego", "mode": "mandatory"}]
    patched = env.api("PATCH", f"/policies/{policy_id}", {"data": {"type": "policies", "attributes": {
        "enforcement-level": "advisory", "description": "now advisory"}}}).json()["data"]["attributes"]  # fmt: skip
    assert (patched["enforcement-level"], patched["description"]) == ("advisory", "now advisory")
    listed = env.api("GET", "/organizations/acme/policies?search[name]=no_").json()
    assert [p["id"] for p in listed["data"]] == [policy_id] and listed["meta"]["pagination"]["total-count"] == 1
    assert env.api("GET", "/organizations/acme/policies?filter[kind]=sentinel").json()["data"] == []
    assert env.api("DELETE", f"/policies/{policy_id}").status_code == 204
    assert env.api("GET", f"/policies/{policy_id}").status_code == 404


def test_a_policy_that_does_not_compile_is_422_with_the_engines_message() -> None:
    env = make_run_env()
    policy_id = create_policy(env, "broken", rego=None)
    bad = "package terraform.policies.broken\nimport rego.v1\ndeny contains msg if {\n  msg :=\n}\n"
    answer = env.client.put(f"/api/v2/policies/{policy_id}/upload", content=bad, headers=env.headers)
    assert answer.status_code == 422
    detail = answer.json()["errors"][0]["detail"]
    assert detail.startswith("the policy does not compile:") and "broken.rego:4" in detail
    assert env.api("GET", f"/policies/{policy_id}/download").status_code == 404  # nothing half-written


def test_bad_policy_input_is_422() -> None:
    env = make_run_env()
    create_policy(env, "taken", rego=None)
    cases = [
        {"name": "taken", "kind": "opa", "query": "data.x", "enforcement-level": "mandatory"},  # duplicate
        {"name": "nope/nope!", "kind": "opa", "query": "data.x", "enforcement-level": "mandatory"},
        {"name": "noquery", "kind": "opa", "enforcement-level": "mandatory"},
        {"name": "badlevel", "kind": "opa", "query": "data.x", "enforcement-level": "hard-mandatory"},
        {"name": "nolevel", "kind": "opa", "query": "data.x"},
        {"name": "badkind", "kind": "cue", "query": "data.x", "enforcement-level": "mandatory"},
    ]
    for attrs in cases:
        answer = env.api("POST", "/organizations/acme/policies", {"data": {"type": "policies", "attributes": attrs}})
        assert answer.status_code == 422, (attrs, answer.text)
        assert answer.json()["errors"][0]["detail"]
    assert len(env.api("GET", "/organizations/acme/policies").json()["data"]) == 1


def test_sentinel_policies_are_stored_as_go_tfe_sends_them() -> None:
    env = make_run_env()
    body = {"data": {"type": "policies", "attributes": {"name": "s1", "enforce": [
        {"path": "s1.sentinel", "mode": "soft-mandatory"}]}}}  # fmt: skip
    created = env.api("POST", "/organizations/acme/policies", body).json()["data"]
    assert created["attributes"]["kind"] == "sentinel" and created["attributes"]["enforce"] == []
    path = f"/api/v2/policies/{created['id']}/upload"
    assert env.client.put(path, content=b"main = rule { true }", headers=env.headers).status_code == 200
    enforce = env.api("GET", f"/policies/{created['id']}").json()["data"]["attributes"]["enforce"]
    assert enforce == [{"path": "s1.sentinel", "mode": "soft-mandatory"}]


def test_policy_sets_members_and_includes() -> None:
    env = make_run_env()
    policy_id = create_policy(env, "no_null")
    ps = create_set(env, "guard", policies=(policy_id,), workspaces=(env.workspace_id,), overridable=True)
    assert ps["id"].startswith("polset-")
    attrs = ps["attributes"]
    assert (attrs["kind"], attrs["overridable"], attrs["global"]) == ("opa", True, False)
    assert (attrs["policy-count"], attrs["workspace-count"], attrs["project-count"]) == (1, 1, 0)
    assert ps["relationships"]["policies"]["data"] == [{"type": "policies", "id": policy_id}]
    assert env.api("GET", f"/policies/{policy_id}").json()["data"]["attributes"]["policy-set-count"] == 1
    read = env.api("GET", f"/policy-sets/{ps['id']}?include=workspaces,policies").json()
    included = {(i["type"], i["id"]) for i in read["included"]}
    assert included == {("workspaces", env.workspace_id), ("policies", policy_id)}
    assert read["included"][0]["attributes"]["name"] in ("app", "no_null")
    patterns = {"data": {"type": "policy-sets", "attributes": {"policy-update-patterns": ["*.rego", "policies/**"]}}}
    updated = env.api("PATCH", f"/policy-sets/{ps['id']}", patterns).json()["data"]["attributes"]
    assert updated["policy-update-patterns"] == ["*.rego", "policies/**"]  # HCP's name (go-tfe v1.109)
    removed = env.api("DELETE", f"/policy-sets/{ps['id']}/relationships/workspaces",
                      {"data": [{"type": "workspaces", "id": env.workspace_id}]})  # fmt: skip
    assert removed.status_code == 204
    excluded = env.api("POST", f"/policy-sets/{ps['id']}/relationships/workspace-exclusions",
                       {"data": [{"type": "workspaces", "id": env.workspace_id}]})  # fmt: skip
    assert excluded.status_code == 204
    read = env.api("GET", f"/policy-sets/{ps['id']}").json()["data"]
    assert read["relationships"]["workspaces"]["data"] == []
    assert read["relationships"]["workspace-exclusions"]["data"] == [{"type": "workspaces", "id": env.workspace_id}]
    empty = env.api("POST", f"/policy-sets/{ps['id']}/relationships/policies", {"data": []})
    assert empty.status_code == 422
    stranger = env.api("POST", f"/policy-sets/{ps['id']}/relationships/workspaces",
                       {"data": [{"type": "workspaces", "id": "ws-doesnotexist1234"}]})  # fmt: skip
    assert stranger.status_code == 404
    sentinel = env.api("POST", "/organizations/acme/policies", {"data": {"type": "policies", "attributes": {
        "name": "s", "enforce": [{"path": "s.sentinel", "mode": "advisory"}]}}}).json()["data"]  # fmt: skip
    mixed = env.api("POST", f"/policy-sets/{ps['id']}/relationships/policies",
                    {"data": [{"type": "policies", "id": sentinel["id"]}]})  # fmt: skip
    assert mixed.status_code == 422
    listed = env.api("GET", "/organizations/acme/policy-sets?filter[kind]=opa&search[name]=gua").json()["data"]
    assert [s["id"] for s in listed] == [ps["id"]]
    assert env.api("DELETE", f"/policies/{policy_id}").status_code == 204
    assert env.api("GET", f"/policy-sets/{ps['id']}").json()["data"]["relationships"]["policies"]["data"] == []
    assert env.api("DELETE", f"/policy-sets/{ps['id']}").status_code == 204
    assert env.api("GET", f"/policy-sets/{ps['id']}").status_code == 404


def test_policy_set_parameters_keep_sensitive_values_write_only() -> None:
    env = make_run_env()
    ps = create_set(env, "params")
    body = {"data": {"type": "vars", "attributes": {"key": "region", "value": "eu", "category": "policy-set"}}}
    param = env.api("POST", f"/policy-sets/{ps['id']}/parameters", body).json()["data"]
    assert param["attributes"] == {"key": "region", "value": "eu", "sensitive": False, "category": "policy-set"}
    assert param["relationships"]["configurable"]["data"] == {"type": "policy-sets", "id": ps["id"]}
    secret = {"data": {"type": "vars", "attributes": {"sensitive": True}}}
    patched = env.api("PATCH", f"/policy-sets/{ps['id']}/parameters/{param['id']}", secret).json()["data"]
    assert patched["attributes"]["sensitive"] is True and patched["attributes"]["value"] == ""
    listed = env.api("GET", f"/policy-sets/{ps['id']}/parameters").json()["data"]
    assert [p["attributes"]["value"] for p in listed] == [""]
    assert env.container.policy_set_parameters.values(ps["id"]) == {"region": "eu"}  # kept for the evaluation
    no_category = {"data": {"type": "vars", "attributes": {"key": "k", "value": "v"}}}
    assert env.api("POST", f"/policy-sets/{ps['id']}/parameters", no_category).status_code == 422
    assert env.api("DELETE", f"/policy-sets/{ps['id']}/parameters/{param['id']}").status_code == 204
    assert env.api("GET", f"/policy-sets/{ps['id']}/parameters/{param['id']}").status_code == 404


def test_managing_policies_needs_manage_policies_and_strangers_see_404() -> None:
    env = make_run_env()
    policy_id = create_policy(env, "no_null")
    ps = create_set(env, "guard", policies=(policy_id,))
    reader = member(env, "reader")
    manager = member(env, "manager", **{"manage-policies": True})
    assert call(env, reader, "GET", f"/policies/{policy_id}").status_code == 200
    assert call(env, reader, "GET", f"/policy-sets/{ps['id']}").status_code == 200
    change = {"data": {"type": "policies", "attributes": {"description": "x"}}}
    assert call(env, reader, "PATCH", f"/policies/{policy_id}", change).status_code == 403
    assert call(env, reader, "DELETE", f"/policy-sets/{ps['id']}").status_code == 403
    assert call(env, manager, "PATCH", f"/policies/{policy_id}", change).status_code == 200
    assert call(env, manager, "POST", f"/policy-sets/{ps['id']}/versions").status_code == 201
    stranger = env.container.accounts.create_user("stranger", "s@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, stranger.id).secret
    hidden = [call(env, token, "GET", p).json() for p in (f"/policies/{policy_id}", "/policies/pol-doesnotexist1234")]
    assert [h["errors"][0]["status"] for h in hidden] == ["404", "404"]
    assert call(env, token, "GET", f"/policy-sets/{ps['id']}").status_code == 404


def test_feature_sets_and_subscriptions_answer_site_admins_only() -> None:
    env = make_run_env()
    assert env.api("GET", "/admin/feature-sets?q=Business").status_code == 404  # alice is no site admin
    assert env.api("POST", "/admin/organizations/acme/subscription", {}).status_code == 404
    admin = env.container.accounts.create_user("root", "root@example.com", site_admin=True)
    token = env.container.accounts.issue_token(PrincipalKind.USER, admin.id).secret
    sets = call(env, token, "GET", "/admin/feature-sets?q=Business").json()["data"]
    assert [(s["type"], s["attributes"]["name"]) for s in sets] == [("feature-sets", "Business")]
    body = {
        "data": {
            "type": "subscription",
            "attributes": {"runs-ceiling": 10},
            "relationships": {"feature-set": {"data": {"type": "feature-sets", "id": sets[0]["id"]}}},
        }
    }
    upgraded = call(env, token, "POST", "/admin/organizations/acme/subscription", body)
    assert upgraded.status_code == 201 and upgraded.json()["data"]["attributes"]["is-active"] is True
    assert call(env, token, "POST", "/admin/organizations/nosuch/subscription", body).status_code == 404


def test_a_policy_created_with_policy_sets_joins_them() -> None:
    """`relationships.policy-sets` of `POST /organizations/:org/policies` (HCP Terraform's API): the policy is in
    those sets at once; a set that is not this organization's, or of the other kind, refuses the whole creation."""
    env = make_run_env()
    guard, other = create_set(env, "guard"), create_set(env, "other")
    sentinel = create_set(env, "legacy", kind="sentinel")

    def create(name: str, *set_ids: str) -> dict:
        body = {"data": {"type": "policies", "attributes": {"name": name, "kind": "opa", "query": "data.x.deny",
                "enforcement-level": "advisory"}, "relationships": {"policy-sets": {
                "data": [{"type": "policy-sets", "id": i} for i in set_ids]}}}}  # fmt: skip
        return env.api("POST", "/organizations/acme/policies", body)

    created = create("joined", guard["id"], other["id"], guard["id"])
    assert created.status_code == 201, created.text
    policy_id = created.json()["data"]["id"]
    assert created.json()["data"]["attributes"]["policy-set-count"] == 2
    for ps in (guard, other):
        held = env.api("GET", f"/policy-sets/{ps['id']}").json()["data"]["relationships"]["policies"]["data"]
        assert held == [{"type": "policies", "id": policy_id}]
    assert env.api("GET", f"/policies/{policy_id}").json()["data"]["attributes"]["policy-set-count"] == 2
    for refused, status in ((create("wrong_kind", sentinel["id"]), 422), (create("missing", "polset-nope"), 404)):
        assert refused.status_code == status, refused.text
    names = [p["attributes"]["name"] for p in env.api("GET", "/organizations/acme/policies").json()["data"]]
    assert sorted(names) == ["joined"]  # a refused creation leaves no policy behind
    bad = {"data": {"type": "policies", "attributes": {"name": "b", "kind": "opa", "enforcement-level": "advisory"},
           "relationships": {"policy-sets": {"data": "polset-x"}}}}  # fmt: skip
    assert env.api("POST", "/organizations/acme/policies", bad).status_code == 422


def test_tag_selectors_include_and_exclude_workspaces_by_their_tags() -> None:
    """go-tfe v1.109's `TestPolicySets*TagSelectors`: `POST`/`DELETE /policy-sets/:id/tag-selectors` and
    `tag-selectors` at creation; a global set skips workspaces an exclusion selector matches, a set of its own
    applies to those an inclusion selector matches (a selector without a value matches the key with any value)."""
    env = make_run_env()
    tagged = {"data": {"type": "workspaces", "attributes": {"tag-bindings": [{"key": "env", "value": "prod"},
              {"key": "team", "value": "ops"}]}}}  # fmt: skip
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", tagged).status_code == 200, "tag bindings"
    ws = env.container.workspaces.load(env.workspace_id)
    applying = env.container.policy_sets.applying_to

    glob = create_set(env, "everywhere", **{"global": True})
    path = f"/policy-sets/{glob['id']}/tag-selectors"
    exclude = {"data": [{"tag-key": "env", "tag-value": "prod", "is-exclude": True}]}
    assert [s.id for s in applying(ws)] == [glob["id"]]
    assert env.api("POST", path, exclude).status_code == 204
    read = env.api("GET", f"/policy-sets/{glob['id']}").json()["data"]["attributes"]["tag-selectors"]
    assert read == [{"tag-key": "env", "tag-value": "prod", "is-exclude": True}]
    assert applying(ws) == []
    assert env.api("DELETE", path, exclude).status_code == 204
    assert [s.id for s in applying(ws)] == [glob["id"]]
    env.api("DELETE", f"/policy-sets/{glob['id']}")

    selectors = [{"tag-key": "team", "tag-value": None, "is-exclude": False}]
    own = create_set(env, "by-tag", **{"tag-selectors": selectors})
    assert own["attributes"]["tag-selectors"] == selectors
    assert [s.id for s in applying(ws)] == [own["id"]]  # `team` with any value
    other = create_set(env, "other", **{"tag-selectors": [{"tag-key": "env", "tag-value": "dev"}]})
    assert other["id"] not in [s.id for s in applying(ws)]
    for bad in ({"data": []}, {"data": [{"tag-key": ""}]}, {"data": [{"tag-key": "a", "is-exclude": "yes"}]}, None):
        assert env.api("POST", f"/policy-sets/{own['id']}/tag-selectors", bad).status_code == 422, bad
    assert env.api("POST", "/policy-sets/polset-nope/tag-selectors", exclude).status_code == 404


def test_project_exclusions_keep_a_global_set_off_a_projects_workspaces() -> None:
    """`/policy-sets/:id/relationships/project-exclusions` (go-tfe v1.109's `TestPolicySet*ProjectExclusions`)."""
    env = make_run_env()
    ws = env.container.workspaces.load(env.workspace_id)
    project_id = env.api("GET", f"/workspaces/{ws.id}").json()["data"]["relationships"]["project"]["data"]["id"]
    glob = create_set(env, "everywhere", **{"global": True})
    path = f"/policy-sets/{glob['id']}/relationships/project-exclusions"
    members = {"data": [{"type": "projects", "id": project_id}]}
    assert env.api("POST", path, members).status_code == 204
    read = env.api("GET", f"/policy-sets/{glob['id']}?include=project_exclusions").json()
    assert read["data"]["relationships"]["project-exclusions"]["data"] == [{"type": "projects", "id": project_id}]
    assert [i["id"] for i in read["included"]] == [project_id]
    assert env.container.policy_sets.applying_to(ws) == []
    assert env.api("DELETE", path, members).status_code == 204
    assert [s.id for s in env.container.policy_sets.applying_to(ws)] == [glob["id"]]
    missing = {"data": [{"type": "projects", "id": "prj-nope"}]}
    assert env.api("POST", path, missing).status_code == 404
