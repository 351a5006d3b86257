"""The site admin API (/api/v2/admin) through the HTTP app: only a site admin's user token reaches it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from terrace.bootstrap import Container, build_memory
from terrace.config import Settings
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app


@dataclass
class Site:
    container: Container
    client: TestClient
    admin: dict[str, str]
    user: dict[str, str]
    user_id: str


def _headers(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}", "Content-Type": "application/vnd.api+json"}


@pytest.fixture
def site() -> Site:
    settings = Settings(
        table_name="memory",
        blob_bucket="memory",
        url_signing_secret="test-secret",
        tool_catalog="terraform=1.0.3,terraform=1.11.4,opentofu=1.9.4",
    )
    container = build_memory(settings)
    admin = container.accounts.create_user("root", "root@example.com", site_admin=True)
    user = container.accounts.create_user("alice", "alice@example.com")
    admin_secret = container.accounts.issue_token(PrincipalKind.USER, admin.id).secret
    user_secret = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    client = TestClient(create_app(container))
    for name, headers in (("acme", _headers(user_secret)), ("globex", _headers(admin_secret))):
        body = {"data": {"type": "organizations", "attributes": {"name": name, "email": f"ops@{name}.example"}}}
        assert client.post("/api/v2/organizations", json=body, headers=headers).status_code == 201
    return Site(container, client, _headers(admin_secret), _headers(user_secret), user.id)


def _workspace(site: Site, org: str, name: str, headers: dict[str, str]) -> str:
    body = {"data": {"type": "workspaces", "attributes": {"name": name}}}
    resp = site.client.post(f"/api/v2/organizations/{org}/workspaces", json=body, headers=headers)
    assert resp.status_code == 201, resp.text
    return str(resp.json()["data"]["id"])


ADMIN_PATHS = [
    "/api/v2/admin/organizations",
    "/api/v2/admin/organizations/acme",
    "/api/v2/admin/users",
    "/api/v2/admin/workspaces",
    "/api/v2/admin/runs",
    "/api/v2/admin/terraform-versions",
    "/api/v2/admin/opentofu-versions",
]


@pytest.mark.parametrize("path", ADMIN_PATHS)
def test_the_admin_api_does_not_exist_for_anyone_but_a_site_admin(site: Site, path: str) -> None:
    assert site.client.get(path, headers=site.user).status_code == 404
    assert site.client.get(path, headers=site.admin).status_code == 200
    org_token = site.container.accounts.issue_token(PrincipalKind.ORGANIZATION, "acme", organization="acme")
    assert site.client.get(path, headers=_headers(org_token.secret)).status_code == 404


def test_admin_lists_every_organization_with_query_and_owners(site: Site) -> None:
    resp = site.client.get("/api/v2/admin/organizations?include=owners", headers=site.admin).json()
    assert sorted(d["id"] for d in resp["data"]) == ["acme", "globex"]
    assert {i["attributes"]["email"] for i in resp["included"]} == {"alice@example.com", "root@example.com"}
    resp = site.client.get("/api/v2/admin/organizations?q=acm", headers=site.admin).json()
    assert [d["id"] for d in resp["data"]] == ["acme"] and resp["meta"]["pagination"]["total-count"] == 1
    assert site.client.get("/api/v2/admin/organizations/nope", headers=site.admin).status_code == 404


def test_admin_update_disables_an_organization_for_its_owners(site: Site) -> None:
    attrs = {"is-disabled": True, "workspace-limit": 42, "terraform-build-worker-plan-timeout": "3h"}
    resp = site.client.patch(
        "/api/v2/admin/organizations/acme", json={"data": {"attributes": attrs}}, headers=site.admin
    )
    assert resp.status_code == 200, resp.text
    got = resp.json()["data"]["attributes"]
    assert (got["is-disabled"], got["workspace-limit"], got["terraform-build-worker-plan-timeout"]) == (True, 42, "3h")
    assert site.client.get("/api/v2/organizations/acme", headers=site.user).status_code == 404
    resp = site.client.patch(
        "/api/v2/admin/organizations/acme", json={"data": {"attributes": {"is-disabled": False}}}, headers=site.admin
    )
    assert site.client.get("/api/v2/organizations/acme", headers=site.user).status_code == 200
    bad = {"data": {"attributes": {"workspace-limit": "many"}}}
    assert site.client.patch("/api/v2/admin/organizations/acme", json=bad, headers=site.admin).status_code == 422


def test_module_consumers_are_replaced_and_must_exist(site: Site) -> None:
    path = "/api/v2/admin/organizations/acme/relationships/module-consumers"
    body = {"data": [{"type": "organizations", "id": "globex"}]}
    assert site.client.patch(path, json=body, headers=site.admin).status_code == 204
    assert [d["id"] for d in site.client.get(path, headers=site.admin).json()["data"]] == ["globex"]
    missing = {"data": [{"type": "organizations", "id": "initech"}]}
    assert site.client.patch(path, json=missing, headers=site.admin).status_code == 404
    assert [d["id"] for d in site.client.get(path, headers=site.admin).json()["data"]] == ["globex"]


def test_admin_deletes_an_organization(site: Site) -> None:
    assert site.client.delete("/api/v2/admin/organizations/acme", headers=site.admin).status_code == 204
    assert site.client.get("/api/v2/admin/organizations/acme", headers=site.admin).status_code == 404
    assert site.client.delete("/api/v2/admin/organizations/acme", headers=site.admin).status_code == 404


def test_admin_workspaces_across_organizations_with_query_and_sort(site: Site) -> None:
    a = _workspace(site, "acme", "zeta", site.user)
    b = _workspace(site, "globex", "alpha", site.admin)
    resp = site.client.get("/api/v2/admin/workspaces?sort=name&include=organization", headers=site.admin).json()
    assert [d["id"] for d in resp["data"]] == [b, a]
    assert {i["id"] for i in resp["included"]} == {"acme", "globex"}
    resp = site.client.get("/api/v2/admin/workspaces?q=zet", headers=site.admin).json()
    assert [d["id"] for d in resp["data"]] == [a]
    resp = site.client.get("/api/v2/admin/workspaces?filter[current_run][status]=applied", headers=site.admin)
    assert resp.json()["data"] == []
    got = site.client.get(f"/api/v2/admin/workspaces/{a}", headers=site.admin).json()["data"]
    assert (got["attributes"]["name"], got["relationships"]["organization"]["data"]["id"]) == ("zeta", "acme")
    assert site.client.delete(f"/api/v2/admin/workspaces/{a}", headers=site.admin).status_code == 204
    assert site.client.get(f"/api/v2/admin/workspaces/{a}", headers=site.admin).status_code == 404
    assert site.client.get(f"/api/v2/workspaces/{a}", headers=site.user).status_code == 404


def test_admin_users_list_filters_suspend_and_grant(site: Site) -> None:
    users = site.client.get("/api/v2/admin/users?include=organizations", headers=site.admin).json()
    assert {u["attributes"]["username"] for u in users["data"]} == {"root", "alice"}
    alice = next(u for u in users["data"] if u["attributes"]["username"] == "alice")
    assert alice["relationships"]["organizations"]["data"] == [{"type": "organizations", "id": "acme"}]
    assert alice["attributes"]["avatar-url"].startswith("https://")
    invite = {"data": {"type": "organization-memberships", "attributes": {"email": "bob@example.com"}}}
    r = site.client.post("/api/v2/organizations/globex/organization-memberships", json=invite, headers=site.admin)
    assert r.status_code == 201, r.text  # an invited member, not an owner, of globex: listed with it
    users = site.client.get("/api/v2/admin/users?include=organizations", headers=site.admin).json()
    bob = next(u for u in users["data"] if u["attributes"]["email"] == "bob@example.com")
    assert bob["relationships"]["organizations"]["data"] == [{"type": "organizations", "id": "globex"}]
    early = site.container.accounts.create_user("zz-early", "early@example.com")  # last by name
    item = site.container.table.get(early.id, "user")
    assert item is not None
    site.container.table.put({**item, "created_at": "2001-01-01T00:00:00.000Z"})  # the oldest user
    listed = site.client.get("/api/v2/admin/users", headers=site.admin).json()["data"]
    assert listed[0]["attributes"]["username"] == "zz-early"  # oldest first, whatever the names
    admins = site.client.get("/api/v2/admin/users?filter[admin]=true", headers=site.admin).json()["data"]
    assert [u["attributes"]["username"] for u in admins] == ["root"]
    found = site.client.get("/api/v2/admin/users?q=alice@example", headers=site.admin).json()
    assert [u["id"] for u in found["data"]] == [site.user_id] and found["meta"]["pagination"]["total-count"] == 1

    base = f"/api/v2/admin/users/{site.user_id}/actions"
    resp = site.client.post(f"{base}/suspend", headers=site.admin)
    assert resp.status_code == 200 and resp.json()["data"]["attributes"]["is-suspended"] is True
    assert site.client.get("/api/v2/account/details", headers=site.user).status_code == 401
    site.client.post(f"{base}/unsuspend", headers=site.admin)
    assert site.client.get("/api/v2/account/details", headers=site.user).status_code == 200

    assert site.client.post(f"{base}/grant_admin", headers=site.admin).json()["data"]["attributes"]["is-admin"]
    assert site.client.get("/api/v2/admin/users", headers=site.user).status_code == 200  # at once
    site.client.post(f"{base}/revoke_admin", headers=site.admin)
    assert site.client.get("/api/v2/admin/users", headers=site.user).status_code == 404


def test_admin_deletes_a_user_and_their_tokens(site: Site) -> None:
    assert site.client.delete(f"/api/v2/admin/users/{site.user_id}", headers=site.admin).status_code == 204
    assert site.client.get("/api/v2/account/details", headers=site.user).status_code == 401
    assert site.client.delete(f"/api/v2/admin/users/{site.user_id}", headers=site.admin).status_code == 404
    assert site.client.delete("/api/v2/admin/users/non-existing-user-id", headers=site.admin).status_code == 404
    users = site.client.get("/api/v2/admin/users", headers=site.admin).json()["data"]
    assert [u["attributes"]["username"] for u in users] == ["root"]


def test_admin_update_takes_the_newer_attribute_names(site: Site) -> None:
    """go-tfe v1.109's `TestAdminOrganizations_Update` sends `global-provider-sharing` and TFE's newer timeout names
    (`apply-timeout`, `plan-timeout`: the build worker's two) and reads them back."""
    attrs = {"global-provider-sharing": True, "apply-timeout": "5h", "plan-timeout": "90m"}
    resp = site.client.patch(
        "/api/v2/admin/organizations/acme", json={"data": {"attributes": attrs}}, headers=site.admin
    )
    assert resp.status_code == 200, resp.text
    got = resp.json()["data"]["attributes"]
    assert (got["global-provider-sharing"], got["apply-timeout"], got["plan-timeout"]) == (True, "5h", "90m")
    assert (got["terraform-build-worker-apply-timeout"], got["terraform-build-worker-plan-timeout"]) == ("5h", "90m")
    bad = {"data": {"attributes": {"plan-timeout": "soon"}}}
    assert site.client.patch("/api/v2/admin/organizations/acme", json=bad, headers=site.admin).status_code == 422


def test_an_organization_without_user_tokens_refuses_them_and_not_other_tokens(site: Site) -> None:
    """`user-tokens-enabled: false` (go-tfe v1.109's `TestOrganizationsUpdate`): users' API tokens, a site admin's
    too, are refused there (401); organization and team tokens still work, and may turn them back on."""
    org_token = site.client.post("/api/v2/organizations/acme/authentication-token", headers=site.user)
    as_org = {"Authorization": f"Bearer {org_token.json()['data']['attributes']['token']}"}
    read = site.client.get("/api/v2/organizations/acme", headers=site.user).json()["data"]["attributes"]
    assert read["user-tokens-enabled"] is True
    off = {"data": {"type": "organizations", "attributes": {"user-tokens-enabled": False}}}
    changed = site.client.patch("/api/v2/organizations/acme", json=off, headers=site.user)
    assert changed.status_code == 200 and changed.json()["data"]["attributes"]["user-tokens-enabled"] is False
    refused = site.client.get("/api/v2/organizations/acme", headers=site.user)
    assert refused.status_code == 401 and refused.json()["errors"][0]["title"] == "unauthorized"
    assert site.client.get("/api/v2/organizations/acme/workspaces", headers=site.admin).status_code == 401
    assert site.client.get("/api/v2/organizations", headers=site.user).status_code == 200  # its other orgs still
    assert site.client.get("/api/v2/organizations/acme", headers=as_org).status_code == 200
    on = {"data": {"type": "organizations", "attributes": {"user-tokens-enabled": True}}}
    assert site.client.patch("/api/v2/organizations/acme", json=on, headers=as_org).status_code == 200
    assert site.client.get("/api/v2/organizations/acme", headers=site.user).status_code == 200
    bad = {"data": {"type": "organizations", "attributes": {"user-tokens-enabled": "no"}}}
    assert site.client.patch("/api/v2/organizations/acme", json=bad, headers=as_org).status_code == 422


def test_admin_runs_filter_by_creation_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """`filter[from]` and `filter[to]` (go-tfe v1.109's `TestAdminRuns_ListFilterByDates`): the runs created in
    between, both ends included; a time that is not RFC 3339 is a 422."""
    from datetime import UTC, datetime, timedelta

    from run_helpers import make_run_env
    from terrace.domain import clock

    env = make_run_env()
    root = env.container.accounts.create_user("root", "root@example.com", site_admin=True)
    admin = _headers(env.container.accounts.issue_token(PrincipalKind.USER, root.id).secret)
    cv = env.upload_config()
    start = datetime(2030, 5, 1, 12, 0, 0, tzinfo=UTC)
    ids = []
    for seconds in (0, 1, 5):  # at 12:00:00, 12:00:01, 12:00:05
        monkeypatch.setattr(clock, "utcnow", lambda at=start + timedelta(seconds=seconds): at)
        ids.append(env.create_run(cv, **{"plan-only": True})["id"])
    monkeypatch.undo()

    def listed(query: str) -> list[str]:
        resp = env.client.get(f"/api/v2/admin/runs?{query}", headers=admin)
        assert resp.status_code == 200, resp.text
        return sorted(d["id"] for d in resp.json()["data"])

    assert listed("filter[from]=2030-05-01T12:00:00Z&filter[to]=2030-05-01T12:00:01Z") == sorted(ids[:2])
    assert listed("filter[from]=2030-05-01T14:00:01%2B02:00") == sorted(ids[1:])  # another zone, the same moment
    assert listed("filter[to]=2030-05-01T12:00:04Z") == sorted(ids[:2])
    assert listed("filter[from]=2030-05-01T12:00:06Z&filter[to]=2030-05-01T12:00:04Z") == []
    assert listed("") == sorted(ids)
    bad = env.client.get("/api/v2/admin/runs?filter[from]=invalid", headers=admin)
    assert bad.status_code == 422 and bad.json()["errors"][0]["source"]["pointer"] == "/filter[from]"
