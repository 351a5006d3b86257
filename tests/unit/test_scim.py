"""SCIM 2.0 (/scim/v2) through the HTTP app: its tokens work there and nowhere else, users and groups follow RFC
7644 (filters, pagination, PATCH in Okta's and Entra ID's shapes, ETags), groups drive the teams mapped to them,
and deprovisioning removes memberships, tokens and sessions at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from terrace.bootstrap import Container, build_memory
from terrace.config import Settings
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app
from terrace.web.ui.session import COOKIE

PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


@dataclass
class Site:
    container: Container
    client: TestClient
    admin: dict[str, str]
    scim: dict[str, str]
    scim_token_id: str


def _admin_patch(site_client: TestClient, headers: dict[str, str], section: str, attrs: dict[str, Any]) -> None:
    body = {"data": {"type": f"{section}-settings", "attributes": attrs}}
    answer = site_client.patch(f"/api/v2/admin/{section}-settings", json=body, headers=headers)
    assert answer.status_code == 200, answer.text


@pytest.fixture(scope="module")
def site() -> Site:
    container = build_memory(Settings(table_name="memory", blob_bucket="memory", url_signing_secret="test-secret"))
    admin = container.accounts.create_user("root", "root@example.com", site_admin=True)
    admin_h = {"Authorization": f"Bearer {container.accounts.issue_token(PrincipalKind.USER, admin.id).secret}",
               "Content-Type": "application/vnd.api+json"}  # fmt: skip
    client = TestClient(create_app(container))
    body = {"data": {"type": "authentication-tokens", "attributes": {"description": "idp"}}}
    assert client.post("/api/v2/admin/scim-tokens", json=body, headers=admin_h).status_code == 201
    assert client.get("/scim/v2/Users", headers=admin_h).status_code == 401  # a user's token is no SCIM token
    enabling = {"data": {"type": "scim-settings", "attributes": {"enabled": True}}}
    assert client.patch("/api/v2/admin/scim-settings", json=enabling, headers=admin_h).status_code == 422  # no SAML
    _admin_patch(client, admin_h, "saml", {"enabled": True, "sso-endpoint-url": "https://idp.example/sso",
                                            "idp-cert": "cert", "provider-type": "okta"})  # fmt: skip
    _admin_patch(client, admin_h, "scim", {"enabled": True})
    made = client.post("/api/v2/admin/scim-tokens", json=body, headers=admin_h).json()["data"]
    scim_h = {"Authorization": f"Bearer {made['attributes']['token']}", "Content-Type": "application/scim+json"}
    org = {"data": {"type": "organizations", "attributes": {"name": "acme", "email": "ops@acme.example"}}}
    assert client.post("/api/v2/organizations", json=org, headers=admin_h).status_code == 201
    return Site(container, client, admin_h, scim_h, made["id"])


def _user(site: Site, user_name: str, **extra: Any) -> dict[str, Any]:
    body = {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": user_name, "active": True,
            "emails": [{"primary": True, "value": user_name, "type": "work"}], **extra}  # fmt: skip
    made = site.client.post("/scim/v2/Users", json=body, headers=site.scim)
    assert made.status_code == 201, made.text
    assert made.headers["content-type"].startswith("application/scim+json")
    return dict(made.json())


def _team(site: Site, name: str) -> str:
    body = {"data": {"type": "teams", "attributes": {"name": name}}}
    made = site.client.post("/api/v2/organizations/acme/teams", json=body, headers=site.admin)
    assert made.status_code == 201, made.text
    return str(made.json()["data"]["id"])


def test_a_scim_token_works_on_scim_only(site: Site) -> None:
    token = site.scim["Authorization"]
    assert site.client.get("/api/v2/account/details", headers={"Authorization": token}).status_code == 401
    assert site.client.get("/api/v2/organizations", headers={"Authorization": token}).status_code == 401
    config = site.client.get("/scim/v2/ServiceProviderConfig", headers=site.scim)
    assert config.status_code == 200 and config.json()["patch"]["supported"] is True
    kinds = site.client.get("/scim/v2/ResourceTypes", headers=site.scim).json()["Resources"]
    assert {k["id"] for k in kinds} == {"User", "Group"}
    assert len(site.client.get("/scim/v2/Schemas", headers=site.scim).json()["Resources"]) == 2
    assert site.client.get("/scim/v2/Users", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_users_filter_page_and_refuse_duplicates(site: Site) -> None:
    names = [f"page{i}@corp.example" for i in range(3)]
    for name in names:
        _user(site, name)
    found = site.client.get('/scim/v2/Users?filter=userName eq "PAGE1@corp.example"', headers=site.scim).json()
    assert found["totalResults"] == 1 and found["Resources"][0]["userName"] == "page1@corp.example"
    paged = site.client.get('/scim/v2/Users?filter=userName sw "page"&startIndex=2&count=1', headers=site.scim).json()
    assert (paged["totalResults"], paged["startIndex"], paged["itemsPerPage"]) == (3, 2, 1)
    again = site.client.post("/scim/v2/Users", json={"userName": names[0]}, headers=site.scim)
    assert again.status_code == 409 and again.json()["scimType"] == "uniqueness"
    bad = site.client.get("/scim/v2/Users?filter=userName eq", headers=site.scim)
    assert bad.status_code == 400 and bad.json()["scimType"] == "invalidFilter"
    assert site.client.get("/scim/v2/Users/scimu-missing", headers=site.scim).status_code == 404


def test_patch_in_okta_and_entra_shapes_and_etags(site: Site) -> None:
    made = _user(site, "patchme@corp.example", name={"givenName": "Pat", "familyName": "Me"})
    url = f"/scim/v2/Users/{made['id']}"
    entra = {"schemas": [PATCH], "Operations": [
        {"op": "Replace", "path": "name.givenName", "value": "Patricia"},
        {"op": "Add", "path": 'emails[type eq "work"].value', "value": "patricia@corp.example"},
        {"op": "Replace", "path": "displayName", "value": "Patricia Me"}]}  # fmt: skip
    patched = site.client.patch(url, json=entra, headers={**site.scim, "If-Match": made["meta"]["version"]})
    assert patched.status_code == 200, patched.text
    assert patched.json()["name"] == {"givenName": "Patricia", "familyName": "Me"}
    assert patched.json()["emails"][0]["value"] == "patricia@corp.example"
    assert patched.headers["etag"] == patched.json()["meta"]["version"] != made["meta"]["version"]
    stale = site.client.patch(url, json=entra, headers={**site.scim, "If-Match": made["meta"]["version"]})
    assert stale.status_code == 412
    okta = {"schemas": [PATCH], "Operations": [{"op": "replace", "value": {"displayName": "P. Me"}}]}
    assert site.client.patch(url, json=okta, headers=site.scim).json()["displayName"] == "P. Me"
    bad = {"schemas": [PATCH], "Operations": [{"op": "explode", "path": "active"}]}
    assert site.client.patch(url, json=bad, headers=site.scim).status_code == 400


def test_groups_drive_mapped_teams(site: Site) -> None:
    ann, ben = _user(site, "ann@corp.example"), _user(site, "ben@corp.example")
    group = site.client.post("/scim/v2/Groups", json={"displayName": "platform", "members": [{"value": ann["id"]}]},
                             headers=site.scim).json()  # fmt: skip
    team_id = _team(site, "platform")
    mapping = {"data": {"type": "scim-group-mappings", "attributes": {"scim-group-id": group["id"]}}}
    url = f"/api/v2/admin/teams/{team_id}/scim-group-mapping"
    assert site.client.post(url, json=mapping, headers=site.admin).status_code == 204
    assert site.client.post(url, json=mapping, headers=site.admin).status_code == 409  # already linked

    def members() -> set[str]:
        team = site.client.get(f"/api/v2/teams/{team_id}", headers=site.admin).json()["data"]
        assert team["attributes"]["scim-linked"] is True and team["attributes"]["scim-group-name"] == "platform"
        return {u["id"] for u in team["relationships"]["users"]["data"]}

    ann_id, ben_id = (site.container.accounts.user_id_by_email(n) for n in ("ann@corp.example", "ben@corp.example"))
    assert members() == {ann_id}
    add = {"schemas": [PATCH], "Operations": [{"op": "add", "path": "members", "value": [{"value": ben["id"]}]}]}
    assert site.client.patch(f"/scim/v2/Groups/{group['id']}", json=add, headers=site.scim).status_code == 200
    assert members() == {ann_id, ben_id}
    remove = {"schemas": [PATCH], "Operations": [{"op": "remove", "path": f'members[value eq "{ann["id"]}"]'}]}
    assert site.client.patch(f"/scim/v2/Groups/{group['id']}", json=remove, headers=site.scim).status_code == 200
    assert members() == {ben_id}
    listed = site.client.get("/api/v2/admin/scim-groups?q=PLAT", headers=site.admin).json()["data"]
    assert [g["attributes"]["name"] for g in listed] == ["platform"]
    owners = site.client.get("/api/v2/organizations/acme/teams?q=owners", headers=site.admin).json()["data"][0]["id"]
    refused = site.client.post(f"/api/v2/admin/teams/{owners}/scim-group-mapping", json=mapping, headers=site.admin)
    assert refused.status_code == 422 and "Owners team" in refused.text


def test_deprovisioning_removes_memberships_tokens_and_sessions_at_once(site: Site) -> None:
    dee = _user(site, "dee@corp.example")
    group = site.client.post("/scim/v2/Groups", json={"displayName": "dee-team", "members": [{"value": dee["id"]}]},
                             headers=site.scim).json()  # fmt: skip
    team_id = _team(site, "dee-team")
    mapping = {"data": {"type": "scim-group-mappings", "attributes": {"scim-group-id": group["id"]}}}
    site.client.post(f"/api/v2/admin/teams/{team_id}/scim-group-mapping", json=mapping, headers=site.admin)
    user_id = site.container.accounts.user_id_by_email("dee@corp.example")
    assert user_id is not None
    token = site.container.accounts.issue_token(PrincipalKind.USER, user_id).secret
    orgs = site.client.get("/api/v2/organizations", headers={"Authorization": f"Bearer {token}"})
    assert [o["id"] for o in orgs.json()["data"]] == ["acme"]
    off = {"schemas": [PATCH], "Operations": [{"op": "Replace", "path": "active", "value": "False"}]}  # Entra ID's
    answer = site.client.patch(f"/scim/v2/Users/{dee['id']}", json=off, headers=site.scim)
    assert answer.status_code == 200 and answer.json()["active"] is False
    assert site.client.get("/api/v2/organizations", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    assert site.container.accounts.list_tokens(user_id) == []
    assert site.container.accounts.get_user(user_id).suspended is True
    team = site.client.get(f"/api/v2/teams/{team_id}", headers=site.admin).json()["data"]
    assert team["relationships"]["users"]["data"] == []
    on = {"schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": True}}]}  # Okta's
    assert site.client.patch(f"/scim/v2/Users/{dee['id']}", json=on, headers=site.scim).status_code == 200
    assert site.container.accounts.get_user(user_id).suspended is False
    team = site.client.get(f"/api/v2/teams/{team_id}", headers=site.admin).json()["data"]
    assert [u["id"] for u in team["relationships"]["users"]["data"]] == [user_id]  # back through its group
    assert site.client.delete(f"/scim/v2/Users/{dee['id']}", headers=site.scim).status_code == 204
    assert site.container.accounts.get_user(user_id).suspended is True


def test_paused_refuses_changes_and_disabled_refuses_everything(site: Site) -> None:
    _admin_patch(site.client, site.admin, "scim", {"paused": True})
    try:
        paused = site.client.post("/scim/v2/Users", json={"userName": "late@corp.example"}, headers=site.scim)
        assert paused.status_code == 409
        assert site.client.get("/scim/v2/Users", headers=site.scim).status_code == 200
    finally:
        _admin_patch(site.client, site.admin, "scim", {"paused": False})
    scim_token = site.client.get(f"/api/v2/admin/scim-tokens/{site.scim_token_id}", headers=site.admin)
    assert scim_token.status_code == 200 and "token" not in scim_token.json()["data"]["attributes"]


def test_the_site_admin_group_grants_the_site_admin_right(site: Site) -> None:
    eve = _user(site, "eve@corp.example")
    group = site.client.post("/scim/v2/Groups", json={"displayName": "admins"}, headers=site.scim).json()
    _admin_patch(site.client, site.admin, "scim", {"site-admin-group-scim-id": group["id"]})
    shown = site.client.get("/api/v2/admin/scim-settings", headers=site.admin).json()["data"]["attributes"]
    assert shown["site-admin-group-display-name"] == "admins"
    user_id = site.container.accounts.user_id_by_email("eve@corp.example")
    assert user_id is not None
    add = {"schemas": [PATCH], "Operations": [{"op": "add", "path": "members", "value": [{"value": eve["id"]}]}]}
    site.client.patch(f"/scim/v2/Groups/{group['id']}", json=add, headers=site.scim)
    assert site.container.accounts.get_user(user_id).site_admin is True
    leave = {"schemas": [PATCH], "Operations": [{"op": "remove", "path": f'members[value eq "{eve["id"]}"]'}]}
    site.client.patch(f"/scim/v2/Groups/{group['id']}", json=leave, headers=site.scim)
    assert site.container.accounts.get_user(user_id).site_admin is False
    _admin_patch(site.client, site.admin, "scim", {"site-admin-group-scim-id": None})


def test_a_revoked_scim_token_stops_at_once(site: Site) -> None:
    body = {"data": {"type": "authentication-tokens", "attributes": {"description": "short-lived"}}}
    made = site.client.post("/api/v2/admin/scim-tokens", json=body, headers=site.admin).json()["data"]
    headers = {"Authorization": f"Bearer {made['attributes']['token']}"}
    assert site.client.get("/scim/v2/Users", headers=headers).status_code == 200
    listed = site.client.get("/api/v2/admin/scim-tokens", headers=site.admin).json()["data"]
    assert made["id"] in {t["id"] for t in listed} and all("token" not in t["attributes"] for t in listed)
    assert site.client.delete(f"/api/v2/authentication-tokens/{made['id']}", headers=site.admin).status_code == 204
    assert site.client.get("/scim/v2/Users", headers=headers).status_code == 401
    too_long = {"data": {"type": "authentication-tokens",
                         "attributes": {"description": "x", "expired-at": "2099-01-01T00:00:00Z"}}}  # fmt: skip
    assert site.client.post("/api/v2/admin/scim-tokens", json=too_long, headers=site.admin).status_code == 422


def _mapped_member(site: Site, user_name: str, group_name: str) -> tuple[dict[str, Any], str, str]:
    """A SCIM user in a group mapped to a team of acme: (the SCIM user, the Terrace user id, the team id)."""
    made = _user(site, user_name, name={"givenName": "Pat", "familyName": "Doe"}, externalId=f"okta-{user_name}")
    group = site.client.post("/scim/v2/Groups", json={"displayName": group_name, "members": [{"value": made["id"]}]},
                             headers=site.scim).json()  # fmt: skip
    team_id = _team(site, group_name)
    mapping = {"data": {"type": "scim-group-mappings", "attributes": {"scim-group-id": group["id"]}}}
    url = f"/api/v2/admin/teams/{team_id}/scim-group-mapping"
    assert site.client.post(url, json=mapping, headers=site.admin).status_code == 204
    user_id = site.container.accounts.user_id_by_email(user_name)
    assert user_id is not None
    return made, user_id, team_id


@pytest.mark.parametrize("shape", ["okta-patch", "okta-put", "entra-patch"])
def test_deprovisioning_ends_a_signed_in_user_in_the_ui_and_the_api_at_once(site: Site, shape: str) -> None:
    """A user signed in to the UI through their identity provider and holding an API token is deprovisioned in
    the shape each identity provider sends: their next page and their next API call are refused."""
    made, user_id, team_id = _mapped_member(site, f"{shape}@corp.example", f"{shape}-team")
    cookie, _ = site.container.web_sessions.sign_in_federated(user_id, "https://idp.example")
    browser = TestClient(site.client.app)
    browser.cookies.set(COOKIE, cookie)
    token = {"Authorization": f"Bearer {site.container.accounts.issue_token(PrincipalKind.USER, user_id).secret}"}
    assert browser.get("/app/acme/workspaces", follow_redirects=False).status_code == 200
    assert [o["id"] for o in site.client.get("/api/v2/organizations", headers=token).json()["data"]] == ["acme"]

    url = f"/scim/v2/Users/{made['id']}"
    if shape == "okta-put":  # Okta updates with PUT, the whole user, `active` among its attributes
        current = site.client.get(url, headers=site.scim).json()
        answer = site.client.put(url, json={**current, "active": False}, headers=site.scim)
    else:
        value: Any = {"active": False} if shape == "okta-patch" else "False"
        op = {"op": "replace", "value": value} if shape == "okta-patch" else {"op": "Replace", "path": "active",
                                                                              "value": value}  # fmt: skip
        answer = site.client.patch(url, json={"schemas": [PATCH], "Operations": [op]}, headers=site.scim)
    assert answer.status_code == 200 and answer.json()["active"] is False, answer.text

    page = browser.get("/app/acme/workspaces", follow_redirects=False)
    assert page.status_code in (302, 303) and "/app" in page.headers["location"]  # back to the sign-in page
    assert site.client.get("/api/v2/organizations", headers=token).status_code == 401
    assert site.container.web_sessions.resolve(cookie) is None
    assert site.container.accounts.list_tokens(user_id) == []
    team = site.client.get(f"/api/v2/teams/{team_id}", headers=site.admin).json()["data"]
    assert team["relationships"]["users"]["data"] == []
    members = site.client.get("/api/v2/organizations/acme/organization-memberships", headers=site.admin).json()
    assert user_id not in {m["relationships"]["user"]["data"]["id"] for m in members["data"]}


def test_no_token_issued_while_a_user_is_deprovisioned_outlives_it(site: Site, monkeypatch: Any) -> None:
    """The suspension comes first: a token the user asks for while their tokens are being revoked is refused, so
    none comes back to life when the identity provider reactivates them."""
    made, user_id, _ = _mapped_member(site, "racer@corp.example", "racers")
    site.container.accounts.issue_token(PrincipalKind.USER, user_id)
    accounts = site.container.accounts
    revoke, minted = accounts.revoke_token, []

    def revoke_while_the_user_asks_for_a_token(token_id: str) -> Any:
        try:  # what `POST /users/:id/authentication-tokens` from their still-open session would do meanwhile
            minted.append(accounts.issue_token(PrincipalKind.USER, user_id).secret)
        except Exception as exc:  # noqa: BLE001 - refused, as it must be
            minted.append(type(exc).__name__)
        return revoke(token_id)

    monkeypatch.setattr(accounts, "revoke_token", revoke_while_the_user_asks_for_a_token)
    off = {"schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": False}}]}
    assert site.client.patch(f"/scim/v2/Users/{made['id']}", json=off, headers=site.scim).status_code == 200
    monkeypatch.setattr(accounts, "revoke_token", revoke)
    on = {"schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": True}}]}
    assert site.client.patch(f"/scim/v2/Users/{made['id']}", json=on, headers=site.scim).status_code == 200
    assert minted == ["Conflict"]
    assert accounts.list_tokens(user_id) == []


@pytest.mark.parametrize(
    ("expression", "found"),
    [
        ('userName co "FILTER-A"', ["filter-a@corp.example"]),
        ("title pr", ["filter-a@corp.example"]),
        ('userName sw "filter-" and displayName pr', ["filter-a@corp.example", "filter-b@corp.example"]),
        ('userName eq "nobody" or externalId eq "ext-b"', ["filter-b@corp.example"]),
        (
            '(userName eq "filter-a@corp.example" or userName eq "filter-b@corp.example") and title pr',
            ["filter-a@corp.example"],
        ),  # fmt: skip
        ('userName sw "filter-" and not (title pr)', ["filter-b@corp.example"]),
        ('emails[type eq "work" and value co "filter-b"]', ["filter-b@corp.example"]),
        ('userName sw "filter-" and name.familyName eq "Bee"', ["filter-b@corp.example"]),
        (
            'userName sw "filter-" and meta.lastModified gt "2000-01-01T00:00:00Z"',
            ["filter-a@corp.example", "filter-b@corp.example"],
        ),  # fmt: skip
    ],
)
def test_rfc_7644_filters(site: Site, expression: str, found: list[str]) -> None:
    if not site.container.accounts.user_id_by_email("filter-a@corp.example"):
        _user(site, "filter-a@corp.example", title="Engineer", displayName="A")
        _user(site, "filter-b@corp.example", externalId="ext-b", displayName="B", name={"familyName": "Bee"})
    answer = site.client.get("/scim/v2/Users", params={"filter": expression}, headers=site.scim)
    assert answer.status_code == 200, answer.text
    assert sorted(u["userName"] for u in answer.json()["Resources"]) == found
    searched = site.client.post("/scim/v2/Users/.search", json={"filter": expression}, headers=site.scim)
    assert sorted(u["userName"] for u in searched.json()["Resources"]) == found


@pytest.mark.parametrize(
    "expression", ['userName eq', "(userName pr", 'userName eq "a")', "userName like \"a\"", "not userName pr",
                   'emails[type eq "work"', "and", "(" * 40 + "userName pr" + ")" * 40, 'userName eq "a" or'],
)  # fmt: skip
def test_a_bad_filter_is_a_scim_400(site: Site, expression: str) -> None:
    for url in ("/scim/v2/Users", "/scim/v2/Groups"):
        answer = site.client.get(url, params={"filter": expression}, headers=site.scim)
        assert answer.status_code == 400 and answer.json()["scimType"] == "invalidFilter", answer.text


def test_every_error_is_a_scim_error_document(site: Site) -> None:
    """RFC 7644 3.12, for errors met before a route runs too: no token, a bad token, a body that is not JSON."""
    for answer, status in [
        (site.client.get("/scim/v2/Users"), 401),
        (site.client.get("/scim/v2/Users", headers={"Authorization": "Bearer nope"}), 401),
        (site.client.post("/scim/v2/Users", content=b"{", headers=site.scim), 400),
    ]:
        assert answer.status_code == status, answer.text
        assert answer.headers["content-type"].startswith("application/scim+json")
        body = answer.json()
        assert body["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"] and body["status"] == str(status)
    assert body["scimType"] == "invalidSyntax"


def test_entra_booleans_and_conditional_reads(site: Site) -> None:
    made = _user(site, "entra@corp.example")
    url = f"/scim/v2/Users/{made['id']}"
    primary = {"schemas": [PATCH], "Operations": [{"op": "Replace", "path": 'emails[type eq "work"].primary',
                                                   "value": "False"}]}  # fmt: skip
    patched = site.client.patch(url, json=primary, headers=site.scim)
    assert patched.status_code == 200 and patched.json()["emails"][0]["primary"] is False
    etag = patched.headers["etag"]
    assert site.client.get(url, headers={**site.scim, "If-None-Match": etag}).status_code == 304
    assert site.client.get(url, headers={**site.scim, "If-None-Match": 'W/"0"'}).status_code == 200


def test_group_push_in_okta_and_entra_shapes_with_etags(site: Site) -> None:
    """Okta renames with a path-less replace carrying the id; Entra removes members by a value list; a group's
    members are found by a value-path filter; a stale If-Match on PUT and DELETE is 412 and changes nothing."""
    kim, lee = _user(site, "kim@corp.example"), _user(site, "lee@corp.example")
    made = site.client.post("/scim/v2/Groups", json={"displayName": "pushed"}, headers=site.scim).json()
    url = f"/scim/v2/Groups/{made['id']}"
    add = {"schemas": [PATCH], "Operations": [{"op": "Add", "path": "members",
                                               "value": [{"value": kim["id"]}, {"value": lee["id"]}]}]}  # fmt: skip
    assert site.client.patch(url, json=add, headers=site.scim).status_code == 200
    rename = {
        "schemas": [PATCH],
        "Operations": [{"op": "replace", "value": {"id": made["id"], "displayName": "pushed-2"}}],
    }
    renamed = site.client.patch(url, json=rename, headers=site.scim)
    assert renamed.status_code == 200 and renamed.json()["displayName"] == "pushed-2"
    assert renamed.json()["id"] == made["id"]
    entra_remove = {"schemas": [PATCH], "Operations": [{"op": "Remove", "path": "members",
                                                        "value": [{"value": kim["id"]}]}]}  # fmt: skip
    removed = site.client.patch(url, json=entra_remove, headers=site.scim)
    assert [m["value"] for m in removed.json()["members"]] == [lee["id"]]
    found = site.client.get("/scim/v2/Groups", params={"filter": f'members[value eq "{lee["id"]}"]'},
                            headers=site.scim).json()  # fmt: skip
    assert [g["displayName"] for g in found["Resources"]] == ["pushed-2"]
    stale = {**site.scim, "If-Match": made["meta"]["version"]}
    assert site.client.put(url, json={"displayName": "x"}, headers=stale).status_code == 412
    assert site.client.delete(url, headers=stale).status_code == 412
    current = {**site.scim, "If-Match": removed.headers["etag"]}
    assert site.client.delete(url, headers=current).status_code == 204
    assert site.client.get(url, headers=site.scim).status_code == 404
