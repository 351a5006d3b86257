"""Notification configurations through the API as go-tfe and the tfe provider call them: CRUD, the write-only
token, trigger and URL checks (422 naming the field, nothing written), enabling and `actions/verify` sending a
verification whose answer is kept, e-mail recipients that must be members, team configurations, who may manage
them, and deletion with their workspace or team."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient
from notification_helpers import body, create, notification_env, outbound
from run_helpers import join
from table_items import memory_items
from terrace.adapters.memory_mail import MemoryMail
from terrace.adapters.outbound import OutboundResponse
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app
from ui_helpers import sign_in


def test_crud_in_go_tfe_shape_and_the_token_never_comes_back() -> None:
    env = notification_env()
    nc = create(env, token="s3cret-token", triggers=["run:created", "run:completed"])
    assert nc["type"] == "notification-configurations" and nc["id"].startswith("nc-")
    attrs = nc["attributes"]
    assert attrs["destination-type"] == "generic" and attrs["enabled"] is False and attrs["token"] is None
    assert attrs["triggers"] == ["run:created", "run:completed"] and attrs["delivery-responses"] == []
    assert nc["relationships"]["subscribable"]["data"] == {"type": "workspaces", "id": env.workspace_id}
    listed = env.api("GET", f"/workspaces/{env.workspace_id}/notification-configurations").json()
    assert listed["data"] == [nc] and "meta" not in listed  # HCP's whole list (go-tfe v1.109 checks it has no pages)
    paged = env.api("GET", f"/workspaces/{env.workspace_id}/notification-configurations?page[number]=999").json()
    assert paged["data"] == [] and paged["meta"]["pagination"]["total-count"] == 1  # pages when asked for
    assert env.api("GET", f"/notification-configurations/{nc['id']}").json()["data"] == nc
    patch = {"data": {"type": "notification-configurations", "attributes": {"name": "renamed", "triggers": []}}}
    updated = env.api("PATCH", f"/notification-configurations/{nc['id']}", patch).json()["data"]["attributes"]
    assert updated["name"] == "renamed" and updated["triggers"] == [] and updated["url"] == "https://hooks.example/x"
    assert "s3cret-token" not in repr(memory_items(env.container.table))  # stored encrypted
    assert env.api("DELETE", f"/notification-configurations/{nc['id']}").status_code == 204
    assert env.api("GET", f"/notification-configurations/{nc['id']}").status_code == 404
    assert env.api("DELETE", f"/notification-configurations/{nc['id']}").status_code == 404
    assert env.api("GET", "/notification-configurations/nonexisting").status_code == 404


def test_bad_input_is_422_naming_the_field_and_writes_nothing() -> None:
    env = notification_env()
    cases: list[tuple[dict[str, Any], str]] = [
        ({"name": ""}, "/data/attributes/name"),
        ({"destination-type": "pager"}, "/data/attributes/destination-type"),
        ({"url": None}, "/data/attributes/url"),
        ({"destination-type": "slack", "url": ""}, "/data/attributes/url"),
        ({"destination-type": "microsoft-teams", "url": None}, "/data/attributes/url"),
        ({"triggers": ["the beacons of gondor are lit"]}, "/data/attributes/triggers"),
        ({"triggers": ["change_request:created"]}, "/data/attributes/triggers"),  # a team's trigger
        ({"url": "ftp://hooks.example/x"}, "/data/attributes/url"),
        ({"url": "http://169.254.169.254/latest/meta-data"}, "/data/attributes/url"),
        ({"url": "http://127.0.0.1:8080/hook"}, "/data/attributes/url"),
        ({"url": "http://10.0.0.5/hook"}, "/data/attributes/url"),
        ({"url": "http://localhost/hook"}, "/data/attributes/url"),
        ({"url": "https://hooks.example/" + "x" * 2100}, "/data/attributes/url"),
        ({"token": "t" * 1025}, "/data/attributes/token"),
        ({"enabled": "yes"}, "/data/attributes/enabled"),
        ({"destination-type": "email", "email-addresses": ["not-an-address"]}, "/data/attributes/email-addresses"),
    ]
    for attributes, pointer in cases:
        refused = env.api("POST", f"/workspaces/{env.workspace_id}/notification-configurations", body(**attributes))
        assert refused.status_code == 422, (attributes, refused.text)
        assert refused.json()["errors"][0]["source"]["pointer"] == pointer, attributes
    assert env.api("GET", f"/workspaces/{env.workspace_id}/notification-configurations").json()["data"] == []
    nc = create(env)
    for attributes, pointer in cases[5:9]:
        patch = {"data": {"type": "notification-configurations", "attributes": attributes}}
        refused = env.api("PATCH", f"/notification-configurations/{nc['id']}", patch)
        assert refused.status_code == 422 and refused.json()["errors"][0]["source"]["pointer"] == pointer
    assert env.api("GET", f"/notification-configurations/{nc['id']}").json()["data"] == nc  # unchanged


def test_enabling_and_verify_send_a_signed_verification_and_keep_the_answer() -> None:
    env = notification_env()
    sent = outbound(env).sent
    nc = create(env, token="k")
    assert sent == []  # created disabled: nothing sent
    enable = {"data": {"type": "notification-configurations", "attributes": {"enabled": True}}}
    enabled = env.api("PATCH", f"/notification-configurations/{nc['id']}", enable).json()["data"]["attributes"]
    assert len(sent) == 1 and sent[0].url == "https://hooks.example/x"
    assert "X-TFE-Notification-Signature" in sent[0].headers
    [response] = enabled["delivery-responses"]
    assert response["code"] == 200 and response["successful"] is True and response["url"] == "https://hooks.example/x"
    assert set(response) == {"url", "body", "code", "headers", "sent-at", "successful"}
    outbound(env).answer = lambda url, data: OutboundResponse(None, error="connection: refused")
    verified = env.api("POST", f"/notification-configurations/{nc['id']}/actions/verify")
    assert verified.status_code == 200  # go-tfe's Verify: the answer is recorded, whatever it is
    latest = verified.json()["data"]["attributes"]["delivery-responses"][0]
    assert latest["successful"] is False and latest["code"] is None and "refused" in latest["body"]
    assert env.api("POST", "/notification-configurations/nc-missing/actions/verify").status_code == 404


def test_email_recipients_are_members_and_an_update_without_users_empties_them() -> None:
    env = notification_env()
    bob = env.container.accounts.create_user("bob", "bob@example.com")
    bob_token = env.container.accounts.issue_token(PrincipalKind.USER, bob.id).secret
    join(env, bob_token, "bob")
    stranger = env.container.accounts.create_user("eve", "eve@example.com")
    users = lambda *ids: {"users": {"data": [{"type": "users", "id": i} for i in ids]}}  # noqa: E731
    doc = body(**{"destination-type": "email", "url": None})
    doc["data"]["relationships"] = users(stranger.id)
    refused = env.api("POST", f"/workspaces/{env.workspace_id}/notification-configurations", doc)
    assert refused.status_code == 404
    doc["data"]["relationships"] = users(bob.id)
    nc = env.api("POST", f"/workspaces/{env.workspace_id}/notification-configurations", doc).json()["data"]
    assert nc["relationships"]["users"]["data"] == [{"type": "users", "id": bob.id}]
    enable = {"data": {"type": "notification-configurations", "attributes": {"enabled": True, "name": "n"}}}
    updated = env.api("PATCH", f"/notification-configurations/{nc['id']}", enable).json()["data"]
    assert updated["relationships"]["users"]["data"] == []  # go-tfe: "without email users" empties them
    enable["data"]["relationships"] = users(bob.id)  # type: ignore[index]
    env.api("PATCH", f"/notification-configurations/{nc['id']}", enable)
    verified = env.api("POST", f"/notification-configurations/{nc['id']}/actions/verify").json()["data"]
    mail = env.container.mail
    assert isinstance(mail, MemoryMail) and mail.sent[-1].to == ("bob@example.com",)
    assert verified["attributes"]["delivery-responses"][0]["successful"] is True


def test_team_configurations_and_deletion_with_the_team_and_the_workspace() -> None:
    env = notification_env()
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "ops"}}})
    team_id = team.json()["data"]["id"]
    path = f"/teams/{team_id}/notification-configurations"
    refused = env.api("POST", path, body(triggers=["run:created"]))
    assert refused.status_code == 422
    created = env.api("POST", path, body(triggers=["change_request:created"]))
    assert created.status_code == 201, created.text
    nc = created.json()["data"]
    assert nc["relationships"]["subscribable"]["data"] == {"type": "teams", "id": team_id}
    assert env.api("GET", path).json()["data"] == [nc]
    ws_nc = create(env)
    assert env.api("DELETE", f"/teams/{team_id}").status_code == 204
    assert env.api("GET", f"/notification-configurations/{nc['id']}").status_code == 404
    assert env.container.notification_store.find(nc["id"]) is None
    assert env.api("DELETE", f"/workspaces/{env.workspace_id}").status_code == 204
    assert env.container.notification_store.find(ws_nc["id"]) is None


def test_only_workspace_admins_manage_notifications_and_strangers_get_404() -> None:
    env = notification_env()
    nc = create(env)
    bob = env.container.accounts.create_user("bob", "bob@example.com")
    bob_token = env.container.accounts.issue_token(PrincipalKind.USER, bob.id).secret
    join(env, bob_token, "bob")
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "devs"}}})
    team_id = team.json()["data"]["id"]
    members = {"data": [{"type": "users", "id": "bob"}]}
    assert env.api("POST", f"/teams/{team_id}/relationships/users", members).status_code == 204
    grant = lambda access: {"data": {"type": "team-workspaces", "attributes": {"access": access}, "relationships": {  # noqa: E731
        "team": {"data": {"type": "teams", "id": team_id}},
        "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}}}  # fmt: skip
    access = env.api("POST", "/team-workspaces", grant("write"))
    assert access.status_code == 201, access.text
    bob_headers = {"Authorization": f"Bearer {bob_token}", "Content-Type": "application/vnd.api+json"}
    as_bob = lambda method, path, doc=None: env.client.request(method, f"/api/v2{path}", json=doc, headers=bob_headers)  # noqa: E731
    assert as_bob("GET", f"/workspaces/{env.workspace_id}/notification-configurations").status_code == 403
    assert as_bob("GET", f"/notification-configurations/{nc['id']}").status_code == 403  # sees the workspace
    assert as_bob("POST", f"/workspaces/{env.workspace_id}/notification-configurations", body()).status_code == 403
    env.api("PATCH", f"/team-workspaces/{access.json()['data']['id']}",
            {"data": {"type": "team-workspaces", "attributes": {"access": "admin"}}})  # fmt: skip
    assert as_bob("GET", f"/notification-configurations/{nc['id']}").status_code == 200
    assert as_bob("POST", f"/workspaces/{env.workspace_id}/notification-configurations", body()).status_code == 201
    mallory = env.container.accounts.create_user("mallory")
    mallory_token = env.container.accounts.issue_token(PrincipalKind.USER, mallory.id).secret
    headers = {"Authorization": f"Bearer {mallory_token}", "Content-Type": "application/vnd.api+json"}
    hidden = env.client.get(f"/api/v2/notification-configurations/{nc['id']}", headers=headers)
    absent = env.client.get("/api/v2/notification-configurations/nc-doesnotexist00", headers=headers)
    assert hidden.status_code == absent.status_code == 404
    assert hidden.json()["errors"][0]["detail"].replace(nc["id"], "X") == absent.json()["errors"][0]["detail"].replace(
        "nc-doesnotexist00", "X"
    )


def test_deleting_the_organization_deletes_its_workspaces_teams_and_projects_configurations() -> None:
    env = notification_env()
    ws_nc = create(env)
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "ops"}}})
    team_nc = env.api(
        "POST", f"/teams/{team.json()['data']['id']}/notification-configurations",
        body(triggers=["change_request:created"]),
    ).json()["data"]  # fmt: skip
    project_id = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["relationships"]["project"]["data"]
    project_nc = env.api("POST", f"/projects/{project_id['id']}/notification-configurations", body()).json()["data"]
    assert env.api("DELETE", "/organizations/acme").status_code == 204
    store = env.container.notification_store
    assert store.find(ws_nc["id"]) is None and store.find(team_nc["id"]) is None
    assert store.find(project_nc["id"]) is None


def test_hostile_bodies_are_4xx() -> None:
    env = notification_env()
    path = f"/workspaces/{env.workspace_id}/notification-configurations"
    good = body()["data"]["attributes"]
    nc_doc = lambda **attrs: {"data": {"type": "notification-configurations", "attributes": {**good, **attrs}}}  # noqa: E731
    users = {"users": {"data": [{"type": "teams", "id": "x"}]}}
    for doc in (
        nc_doc(name=3),
        nc_doc(triggers="run:created"),
        nc_doc(token=7),
        nc_doc(url=["x"]),
        {"data": {"type": "workspaces", "attributes": good}},
        {"data": {**nc_doc(**{"destination-type": "email"})["data"], "relationships": users}},
        {"data": []},
    ):  # fmt: skip
        answer = env.api("POST", path, doc)
        assert 400 <= answer.status_code < 500 and answer.json()["errors"], (doc, answer.text)
    assert env.api("GET", path).json()["data"] == []


def test_the_page_keeps_email_users_that_only_the_api_sets() -> None:
    env = notification_env()
    bob = env.container.accounts.create_user("bob", "bob@example.com")
    join(env, env.container.accounts.issue_token(PrincipalKind.USER, bob.id).secret, "bob")
    doc = body(**{"destination-type": "email", "url": None})
    doc["data"]["relationships"] = {"users": {"data": [{"type": "users", "id": bob.id}]}}
    nc = env.api("POST", f"/workspaces/{env.workspace_id}/notification-configurations", doc).json()["data"]
    browser = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(browser, env.headers["Authorization"].split()[1]).status_code == 303
    page = browser.get("/app/acme/workspaces/app/notifications")
    assert page.status_code == 200 and "organization members" in page.text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert csrf is not None
    base = f"/app/acme/workspaces/app/notifications/{nc['id']}"
    assert browser.post(f"{base}/enable", data={"csrf_token": csrf.group(1)}).status_code == 303
    edited = {"csrf_token": csrf.group(1), "name": "renamed", "email-addresses": "ops@example.com", "enabled": "on"}
    assert browser.post(base, data=edited).status_code == 303
    kept = env.container.notification_store.load(nc["id"])
    assert kept.email_user_ids == [bob.id] and kept.name == "renamed" and kept.email_addresses == ["ops@example.com"]
    assert browser.post(f"{base}/explode", data={"csrf_token": csrf.group(1)}).status_code == 404
