"""Organizations: rename (keeps everything working, old name 404), delete (deletes everything in it), and the
settings go-tfe reads back (allow-force-delete-workspaces, avatar-url)."""

from __future__ import annotations

import json
from typing import Any

from run_helpers import RunEnv, make_run_env
from table_items import memory_items


def _org_body(**attributes: Any) -> dict[str, Any]:
    return {"data": {"type": "organizations", "attributes": attributes}}


def _rename(env: RunEnv, old: str, new: str) -> Any:
    return env.api("PATCH", f"/organizations/{old}", _org_body(name=new))


def _items(env: RunEnv) -> list[dict[str, Any]]:
    return [dict(item) for item in memory_items(env.container.table, audit=True).values()]


def test_rename_keeps_workspaces_runs_runner_and_run_tokens_and_reserves_the_old_name() -> None:
    env = make_run_env()
    before = env.create_run(env.upload_config())
    env.work_next()  # the plan of the first run finished
    renamed = _rename(env, "acme", "globex")
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["data"]["id"] == "globex"
    assert env.api("GET", "/organizations/acme").status_code == 404
    assert env.api("GET", "/organizations/acme/workspaces").status_code == 404
    listed = env.api("GET", "/organizations/globex/workspaces").json()["data"]
    assert [ws["id"] for ws in listed] == [env.workspace_id]
    ws = env.api("GET", "/organizations/globex/workspaces/app").json()["data"]
    assert ws["relationships"]["organization"]["data"]["id"] == "globex"
    assert ws["links"]["self"] == "/api/v2/organizations/globex/workspaces/app"
    assert env.run(before["id"])["attributes"]["status"] == "cost_estimated"
    # the runner token minted before the rename still works the organization's jobs, and the job it claims
    # addresses the workspace by the new name (the runner's backend override)
    assert env.api("POST", f"/runs/{before['id']}/actions/discard").status_code == 202
    env.create_run(env.upload_config())
    spec = env.claim()
    assert spec["organization"] == "globex"
    run_token = {"Authorization": f"Bearer {spec['run_token']}"}
    assert env.client.get("/api/v2/organizations/globex/workspaces/app", headers=run_token).status_code == 200
    # the old name stays the renamed organization's (workload identity tokens signed under it name it in their
    # `sub`): nobody creates an organization under it, in any case, nor renames another onto it
    for name in ("acme", "ACME"):
        taken = env.api("POST", "/organizations", _org_body(name=name, email="new@example.com"))
        assert taken.status_code == 409, taken.text
        assert "reserved" in taken.json()["errors"][0]["detail"]
    assert env.api("POST", "/organizations", _org_body(name="other", email="o@example.com")).status_code == 201
    assert _rename(env, "other", "acme").status_code == 409
    assert env.api("GET", "/organizations/acme").status_code == 404
    assert env.api("GET", "/organizations/globex/workspaces").json()["meta"]["pagination"]["total-count"] == 1


def test_rename_onto_a_taken_name_is_a_conflict_and_changes_nothing() -> None:
    env = make_run_env()
    assert env.api("POST", "/organizations", _org_body(name="other", email="o@example.com")).status_code == 201
    refused = _rename(env, "acme", "other")
    assert refused.status_code == 409, refused.text
    assert env.api("GET", "/organizations/acme/workspaces/app").status_code == 200
    assert env.api("GET", "/organizations/other/workspaces").json()["data"] == []
    bad = _rename(env, "acme", "no spaces")
    assert bad.status_code == 422
    assert bad.json()["errors"][0]["source"]["pointer"] == "/data/attributes/name"


def test_rename_and_back_and_renaming_a_renamed_organization() -> None:
    env = make_run_env()
    assert _rename(env, "acme", "b").status_code == 200
    assert _rename(env, "b", "c").status_code == 200
    assert _rename(env, "c", "acme").status_code == 200  # back onto its own storage key
    assert env.api("GET", "/organizations/b").status_code == 404
    assert env.api("GET", "/organizations/c").status_code == 404
    assert env.api("GET", "/organizations/acme/workspaces/app").status_code == 200
    names = [org["id"] for org in env.api("GET", "/organizations").json()["data"]]
    assert names == ["acme"]


def test_delete_organization_deletes_everything_in_it_even_a_locked_workspace() -> None:
    env = make_run_env()
    other = env.api(
        "POST", "/organizations/acme/workspaces", {"data": {"type": "workspaces", "attributes": {"name": "b"}}}
    )
    other_id = other.json()["data"]["id"]
    var = {"data": {"type": "vars", "attributes": {"key": "k", "value": "v", "category": "terraform"}}}
    assert env.api("POST", f"/workspaces/{other_id}/vars", var).status_code == 201
    tags = {"data": [{"type": "tags", "attributes": {"name": "team-a"}}]}
    assert env.api("POST", f"/workspaces/{other_id}/relationships/tags", tags).status_code == 204
    assert env.api("GET", "/organizations/acme/tags").json()["data"][0]["attributes"]["name"] == "team-a"
    run = env.create_run(env.upload_config())
    env.work_next(log=b"plan output\n")  # logs, plan blobs, run events and a run token exist now
    queued = env.create_run(env.upload_config(workspace_id=other_id), workspace_id=other_id)
    assert env.queued(), "a job is queued for the organization"
    assert env.api("POST", f"/workspaces/{other_id}/actions/lock", {}).status_code in (200, 409)
    reserved = {"data": {"type": "reserved-tag-keys", "attributes": {"key": "env", "disable-overrides": True}}}
    rtk = env.api("POST", "/organizations/acme/reserved-tag-keys", reserved).json()["data"]["id"]
    ids = {env.workspace_id, other_id, run["id"], queued["id"], rtk}
    assert any(any(i in json.dumps(item) for i in ids) for item in _items(env))

    deleted = env.api("DELETE", "/organizations/acme")
    assert deleted.status_code == 204, deleted.text
    assert env.api("GET", "/organizations/acme").status_code == 404
    left = [item for item in _items(env) if any(i in json.dumps(item) for i in ids) or "acme" in json.dumps(item)]
    # the organization's trail went with it; the record of its creation and deletion stays, in the site's trail
    site_trail = [item for item in left if item["pk"].startswith("audit##")]  # audit##<day>
    assert [item["action"] for item in site_trail] == ["organization.create", "organization.delete"]
    assert [item for item in left if item not in site_trail] == []
    assert [key for key in env.blobs.objects if any(i in key for i in ids)] == []
    assert env.queued() == []
    assert env.runner("POST", "/jobs/next", json={"runner_id": "r1"}).status_code in (401, 404)
    # a new organization under the same name starts empty
    assert env.api("POST", "/organizations", _org_body(name="acme", email="a@example.com")).status_code == 201
    assert env.api("GET", "/organizations/acme/workspaces").json()["data"] == []
    assert env.api("GET", "/organizations/acme/tags").json()["data"] == []
    assert env.api("GET", "/organizations/acme/reserved-tag-keys").json()["data"] == []


def test_allow_force_delete_workspaces_and_avatar_url_are_stored_and_returned() -> None:
    env = make_run_env()
    created = env.api(
        "POST", "/organizations", _org_body(name="o2", email="o@example.com", **{"allow-force-delete-workspaces": True})
    )
    assert created.status_code == 201, created.text
    attrs = created.json()["data"]["attributes"]
    assert attrs["allow-force-delete-workspaces"] is True
    assert "avatar-url" in attrs
    updated = env.api("PATCH", "/organizations/o2", _org_body(**{"allow-force-delete-workspaces": False}))
    assert updated.json()["data"]["attributes"]["allow-force-delete-workspaces"] is False
    assert env.api("GET", "/organizations/o2").json()["data"]["attributes"]["allow-force-delete-workspaces"] is False
    bad = env.api("PATCH", "/organizations/o2", _org_body(**{"allow-force-delete-workspaces": "yes"}))
    assert bad.status_code == 422


def test_names_differing_only_in_case_are_one_name() -> None:
    """As HCP Terraform: `ACME` beside `acme` is refused, on create and on rename; an organization may change
    the case of its own name; an organization stored before (its claim on the exact name) still holds it."""
    env = make_run_env()
    for name in ("ACME", "Acme"):
        refused = env.api("POST", "/organizations", _org_body(name=name, email="x@example.com"))
        assert refused.status_code == 409, refused.text
        assert refused.json()["errors"][0]["status"] == "409"
    assert env.api("POST", "/organizations", _org_body(name="other", email="o@example.com")).status_code == 201
    assert _rename(env, "other", "aCmE").status_code == 409
    assert env.api("GET", "/organizations/other").status_code == 200  # unchanged
    assert _rename(env, "acme", "Acme").status_code == 200  # its own name, another case
    assert env.api("GET", "/organizations/Acme/workspaces/app").status_code == 200
    assert env.api("POST", "/organizations", _org_body(name="acme", email="x@example.com")).status_code == 409
    assert _rename(env, "Acme", "acme").status_code == 200
    # an organization whose claim was written before (on its exact name): found, and its name still taken
    table = env.container.table
    claim = table.get("orgname#other", "orgname")
    assert claim is not None
    table.delete("orgname#other", "orgname")
    rename = _rename(env, "other", "Legacy")
    assert rename.status_code == 200
    table.put({**claim, "pk": "orgname#Legacy"})  # as stored before: the exact name
    table.delete("orgname#legacy", "orgname")
    env.container.organizations.forget(claim["key"])
    assert env.api("GET", "/organizations/Legacy").status_code == 200
    assert env.api("POST", "/organizations", _org_body(name="LEGACY", email="x@example.com")).status_code == 409
    assert env.api("POST", "/organizations", _org_body(name="legacy", email="x@example.com")).status_code == 409
    assert _rename(env, "Legacy", "fresh").status_code == 200
    assert table.get("orgname#Legacy", "orgname") is None  # the old exact claim goes with its name...
    released = table.get("orgname#legacy", "orgname")  # ...and the name stays reserved to its organization
    assert released is not None and released["key"] == claim["key"] and released.get("released_at")
    assert env.api("POST", "/organizations", _org_body(name="legacy", email="x@example.com")).status_code == 409
