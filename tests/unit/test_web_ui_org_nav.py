"""Every workspace page carries the organization's navigation (the one its pages have, Registry and Explorer
among its links) above the workspace's own, with Workspaces marked as the section it is in; the variable set
pages carry it too."""

from __future__ import annotations

import json
import re

from run_helpers import make_run_env
from test_web_ui_runs import claim_next, finish, ui

WS = "/app/acme/workspaces/app"
ORG_LINKS = ("Workspaces", "Projects", "Members", "Teams", "Variable sets", "Policies", "Run tasks", "Agent pools",
             "Registry", "Explorer", "Settings")  # fmt: skip


def organization_nav(html: str) -> str:
    found = re.search(r'<nav class="tabs" aria-label="Organization">(.*?)</nav>', html, re.S)
    assert found, "no organization navigation"
    return found.group(1)


def test_every_workspace_page_has_the_organization_navigation() -> None:
    env = make_run_env()
    state = {"version": 4, "serial": 1, "lineage": "nav", "outputs": {}, "resources": []}
    token = env.headers["Authorization"].removeprefix("Bearer ")
    pushed = env.client.post("/state/v1/acme/app", content=json.dumps(state), auth=("alice", token))
    assert pushed.status_code == 200, pushed.text
    run = env.create_run(env.upload_config())
    finish(env, claim_next(env))
    region = {"data": {"type": "vars", "attributes": {"key": "region", "value": "eu", "category": "env"}}}
    var = env.api("POST", f"/workspaces/{env.workspace_id}/vars", region)
    nc = env.api("POST", f"/workspaces/{env.workspace_id}/notification-configurations",
                 {"data": {"type": "notification-configurations", "attributes": {
                     "name": "mail", "destination-type": "email", "enabled": False}}})  # fmt: skip
    assert var.status_code == 201 and nc.status_code == 201, (var.text, nc.text)
    client = ui(env)
    sv_id = re.search(r'/states/(sv-[^"/?#]+)"', client.get(f"{WS}/states").text)
    assert sv_id, "no state version listed"
    pages = ["", "/runs", f"/runs/{run['id']}", "/states", f"/states/{sv_id.group(1)}", "/health", "/variables",
             f"/variables/{var.json()['data']['id']}", "/effective-variables", "/tasks", "/notifications",
             f"/notifications/{nc.json()['data']['id']}", "/access", "/settings", "/settings/run-triggers",
             "/settings/version-control"]  # fmt: skip
    for page in pages:
        got = client.get(WS + page)
        assert got.status_code == 200, (page, got.status_code)
        nav = organization_nav(got.text)
        for label in ORG_LINKS:
            assert f">{label}</a>" in nav, (page, label)
        assert '<a href="/app/acme/registry">Registry</a>' in nav and '<a href="/app/acme/explorer">Explorer</a>' in nav
        assert '<a href="/app/acme/workspaces" aria-current="true">Workspaces</a>' in nav, page  # the section
        assert 'aria-current="page"' not in nav, page  # this page is the workspace's, not one of these
        assert got.text.index('aria-label="Organization"') < got.text.index('aria-label="Workspace"'), page
        assert got.text.count('aria-label="Breadcrumb"') == 1, page


def test_the_variable_set_pages_have_the_organization_navigation() -> None:
    env = make_run_env()
    made = env.api("POST", "/organizations/acme/varsets", {"data": {"type": "varsets", "attributes": {"name": "s"}}})
    assert made.status_code == 201, made.text
    vs_id = made.json()["data"]["id"]
    var = env.api("POST", f"/varsets/{vs_id}/relationships/vars",
                  {"data": {"type": "vars", "attributes": {"key": "k", "value": "v", "category": "env"}}})  # fmt: skip
    assert var.status_code == 201, var.text
    client = ui(env)
    for page in (f"/app/acme/varsets/{vs_id}", f"/app/acme/varsets/{vs_id}/variables/{var.json()['data']['id']}"):
        got = client.get(page)
        assert got.status_code == 200, page
        nav = organization_nav(got.text)
        assert '<a href="/app/acme/varsets" aria-current="page">Variable sets</a>' in nav and ">Registry</a>" in nav
