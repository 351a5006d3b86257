"""SSH keys: organization CRUD as go-tfe calls it, the workspace `ssh-key` relationship, the value stored encrypted
and never readable back (API, UI), and handed to the jobs of its workspaces only."""

from __future__ import annotations

from typing import Any

from run_helpers import RunEnv, make_run_env
from table_items import memory_items
from terrace.domain.principal import PrincipalKind

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAsecretpart\n-----END OPENSSH PRIVATE KEY-----\n"


def _key_body(**attributes: Any) -> dict[str, Any]:
    return {"data": {"type": "ssh-keys", "attributes": attributes}}


def _create(env: RunEnv, name: str = "deploy", value: str = KEY) -> dict[str, Any]:
    created = env.api("POST", "/organizations/acme/ssh-keys", _key_body(name=name, value=value))
    assert created.status_code == 201, created.text
    return dict(created.json()["data"])


def _assign(env: RunEnv, key_id: str | None, ws: str | None = None) -> Any:
    body = {"data": {"type": "workspaces", "attributes": {"id": key_id}}}
    return env.api("PATCH", f"/workspaces/{ws or env.workspace_id}/relationships/ssh-key", body)


def test_ssh_key_crud_never_shows_the_value() -> None:
    env = make_run_env()
    key = _create(env)
    assert key["type"] == "ssh-keys" and key["id"].startswith("sshkey-")
    assert key["attributes"] == {"name": "deploy"}
    second = _create(env, "other", "not a real key but a value")
    listed = env.api("GET", "/organizations/acme/ssh-keys/").json()["data"]
    assert {k["id"] for k in listed} == {key["id"], second["id"]}
    renamed = env.api("PATCH", f"/ssh-keys/{key['id']}", _key_body(name="renamed"))
    assert renamed.status_code == 200 and renamed.json()["data"]["attributes"]["name"] == "renamed"
    read = env.api("GET", f"/ssh-keys/{key['id']}")
    assert read.json()["data"]["attributes"] == {"name": "renamed"}
    for response in (read, renamed, env.api("GET", "/organizations/acme/ssh-keys")):
        assert "secretpart" not in response.text
    assert "secretpart" not in repr(memory_items(env.container.table))  # stored encrypted
    assert env.api("DELETE", f"/ssh-keys/{second['id']}").status_code == 204
    assert env.api("GET", f"/ssh-keys/{second['id']}").status_code == 404
    assert env.api("DELETE", f"/ssh-keys/{second['id']}").status_code == 404


def test_ssh_key_input_errors_are_422_and_write_nothing() -> None:
    env = make_run_env()
    for attributes, pointer in (
        ({"value": KEY}, "/data/attributes/name"),
        ({"name": "x"}, "/data/attributes/value"),
        ({"name": "x", "value": "k" * 4097}, "/data/attributes/value"),
        ({"name": 3, "value": KEY}, "/data/attributes/name"),
    ):
        refused = env.api("POST", "/organizations/acme/ssh-keys", _key_body(**attributes))
        assert refused.status_code == 422, refused.text
        assert refused.json()["errors"][0]["source"]["pointer"] == pointer
    assert env.api("GET", "/organizations/acme/ssh-keys").json()["data"] == []
    assert env.api("GET", "/ssh-keys/sshkey-nonexisting").status_code == 404


def test_other_organizations_cannot_see_use_or_assign_a_key() -> None:
    env = make_run_env()
    key = _create(env)
    mallory = env.container.accounts.create_user("mallory")
    token = env.container.accounts.issue_token(PrincipalKind.USER, mallory.id).secret
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    org = {"data": {"type": "organizations", "attributes": {"name": "evil", "email": "m@example.com"}}}
    assert env.client.post("/api/v2/organizations", headers=headers, json=org).status_code == 201
    ws = {"data": {"type": "workspaces", "attributes": {"name": "w"}}}
    evil_ws = env.client.post("/api/v2/organizations/evil/workspaces", headers=headers, json=ws).json()["data"]["id"]
    assert env.client.get(f"/api/v2/ssh-keys/{key['id']}", headers=headers).status_code == 404
    assert env.client.get("/api/v2/organizations/acme/ssh-keys", headers=headers).status_code == 404
    body = {"data": {"type": "ssh-keys", "attributes": {"name": "stolen"}}}
    assert env.client.patch(f"/api/v2/ssh-keys/{key['id']}", headers=headers, json=body).status_code == 404
    assign = {"data": {"type": "workspaces", "attributes": {"id": key["id"]}}}
    url = f"/api/v2/workspaces/{evil_ws}/relationships/ssh-key"
    assert env.client.patch(url, headers=headers, json=assign).status_code == 404
    assert env.container.workspaces.load(evil_ws).extra.get("ssh_key_id") is None


def test_an_assigned_key_reaches_its_workspace_s_jobs_only_and_unassigns() -> None:
    env = make_run_env()
    key = _create(env)
    assigned = _assign(env, key["id"])
    assert assigned.status_code == 200, assigned.text
    assert assigned.json()["data"]["relationships"]["ssh-key"]["data"] == {"type": "ssh-keys", "id": key["id"]}
    read = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    assert read["relationships"]["ssh-key"]["data"]["id"] == key["id"]

    env.create_run(env.upload_config())
    spec = env.work_next()
    assert spec["ssh_private_key"] == KEY  # to the runner of this job, over the runner protocol

    other = env.api(
        "POST", "/organizations/acme/workspaces", {"data": {"type": "workspaces", "attributes": {"name": "plain"}}}
    ).json()["data"]["id"]
    env.create_run(env.upload_config(workspace_id=other), workspace_id=other)
    assert env.work_next()["ssh_private_key"] is None

    unassigned = _assign(env, None)
    assert unassigned.status_code == 200 and unassigned.json()["data"]["relationships"]["ssh-key"]["data"] is None
    assert _assign(env, "sshkey-doesnotexist").status_code == 404
    assert _assign(env, 42).status_code == 422


def test_deleting_a_key_unassigns_it() -> None:
    env = make_run_env()
    key = _create(env)
    assert _assign(env, key["id"]).status_code == 200
    assert env.api("DELETE", f"/ssh-keys/{key['id']}").status_code == 204
    ws = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    assert ws["relationships"]["ssh-key"]["data"] is None


def test_a_new_organization_of_the_same_name_never_gets_an_old_key() -> None:
    env = make_run_env()
    org = {"data": {"type": "organizations", "attributes": {"name": "fresh", "email": "f@example.com"}}}
    assert env.api("POST", "/organizations", org).status_code == 201
    created = env.api("POST", "/organizations/fresh/ssh-keys", _key_body(name="old", value=KEY)).json()["data"]
    assert env.api("DELETE", "/organizations/fresh").status_code == 204
    assert env.api("POST", "/organizations", org).status_code == 201
    assert env.api("GET", "/organizations/fresh/ssh-keys").json()["data"] == []
    assert env.api("GET", f"/ssh-keys/{created['id']}").status_code == 404
    ws = env.api(
        "POST", "/organizations/fresh/workspaces", {"data": {"type": "workspaces", "attributes": {"name": "w"}}}
    )
    assert _assign(env, created["id"], ws.json()["data"]["id"]).status_code == 404
