"""Variable sets in the web UI (TestClient): the run page names the source of each variable the run recorded and
shows no value; a workspace reader sees effective variables but not the organization's sets; bad forms are 422."""

from __future__ import annotations

import re

from run_helpers import make_run_env
from test_permission_matrix import _grant, _team, _user
from test_varsets_api import _apply, _set, _var
from test_web_ui_runs import csrf_of, ui


def test_the_run_page_names_where_each_variable_came_from() -> None:
    env = make_run_env()
    vs = _set(env, "shared creds")["id"]
    _var(env, vs, "region", "eu-north-1")
    _var(env, vs, "api_key", "k3y-secret", sensitive=True)
    _apply(env, vs, "workspaces", [env.workspace_id])
    own = {"data": {"type": "vars", "attributes": {"key": "size", "value": "big", "category": "terraform"}}}
    env.api("POST", f"/workspaces/{env.workspace_id}/vars", own)
    run = env.create_run(env.upload_config(), variables=[{"key": "zone", "value": '"a"'}])
    page = ui(env).get(f"/app/acme/workspaces/app/runs/{run['id']}")
    assert page.status_code == 200
    table = page.text.split('id="run-variables"', 1)[1].split("</table>", 1)[0]
    rows = {re.sub(r"<[^>]+>|\s+", " ", row).split()[0]: re.sub(r"<[^>]+>|\s+", " ", row) for row in
            table.split("<tr>")[2:]}  # fmt: skip
    assert "shared creds" in rows["region"] and "workspace-scoped" in rows["region"]
    assert "sensitive" in rows["api_key"] and "shared creds" in rows["api_key"]
    assert "the workspace" in rows["size"] and "this run" in rows["zone"]
    assert "k3y-secret" not in page.text and "eu-north-1" not in table


def test_pages_and_forms() -> None:
    env = make_run_env()
    client = ui(env)
    listing = client.get("/app/acme/varsets")
    assert listing.status_code == 200 and "No variable sets yet" in listing.text
    made = client.post("/app/acme/varsets", data={"csrf_token": csrf_of(listing.text), "name": "creds"})
    assert made.status_code == 303
    set_url = made.headers["location"]
    page = client.get(set_url)
    csrf = csrf_of(page.text)
    again = client.post("/app/acme/varsets", data={"csrf_token": csrf, "name": "creds"})
    assert again.status_code == 422 and "already exists" in again.text
    form = {"csrf_token": csrf, "key": "a", "value": "1", "category": "env"}
    assert client.post(f"{set_url}/variables", data=form).status_code == 303
    duplicate = client.post(f"{set_url}/variables", data={**form, "value": "never-echoed"})
    assert duplicate.status_code == 422 and "never-echoed" not in duplicate.text
    missing = client.post(f"{set_url}/apply", data={"csrf_token": csrf, "kind": "workspaces", "id": "ws-nope12345"})
    assert missing.status_code == 422
    applied = client.post(f"{set_url}/apply", data={"csrf_token": csrf, "kind": "workspaces", "id": env.workspace_id})
    assert applied.status_code == 303
    effective = client.get("/app/acme/workspaces/app/effective-variables")
    assert effective.status_code == 200 and "creds" in effective.text
    assert client.get(set_url.replace("/acme/", "/other/")).status_code == 404
    assert client.post(f"{set_url}/delete", data={"csrf_token": csrf}).status_code == 303
    assert client.get(set_url).status_code == 404

    # a workspace reader: the effective variables, not the organization's sets
    reader = _user(env, "reader")
    _grant(env, "team-workspaces", _team(env, "readers", members=("reader",)), ("workspace", env.workspace_id),
           {"access": "read"})  # fmt: skip
    theirs = ui(env, reader)
    assert theirs.get("/app/acme/workspaces/app/effective-variables").status_code == 200
    assert theirs.get("/app/acme/varsets").status_code in (403, 404)
