"""Users as go-tfe reads them: account details, the account update, user tokens shown once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from test_admin_api import Site, site  # noqa: F401  (the fixture)


def test_account_details_carry_an_avatar_and_two_factor(site: Site) -> None:  # noqa: F811
    me = site.client.get("/api/v2/account/details", headers=site.user).json()["data"]
    assert me["attributes"]["avatar-url"].startswith("https://www.gravatar.com/avatar/")
    assert me["attributes"]["two-factor"] == {"enabled": False, "verified": False}


def test_account_update_renames_and_readdresses_the_user(site: Site) -> None:  # noqa: F811
    def update(attrs: dict[str, object]) -> int:
        return site.client.patch(
            "/api/v2/account/update", json={"data": {"type": "users", "attributes": attrs}}, headers=site.user
        ).status_code

    before = site.client.get("/api/v2/account/details", headers=site.user).json()
    assert update({}) == 200
    assert site.client.get("/api/v2/account/details", headers=site.user).json() == before
    assert update({"username": "NewTestUsername", "email": "new@example.com"}) == 200
    me = site.client.get("/api/v2/account/details", headers=site.user).json()["data"]["attributes"]
    assert (me["username"], me["email"]) == ("NewTestUsername", "new@example.com")
    assert update({"email": "notamailaddress"}) == 422
    assert update({"username": "root"}) == 409  # taken by the admin
    assert update({"username": "alice"}) == 200  # the old name was freed
    found = site.client.get("/api/v2/admin/users?q=alice", headers=site.admin).json()["data"]
    assert [u["attributes"]["email"] for u in found] == ["new@example.com"]


def test_user_tokens_without_a_type_with_expiry_and_the_secret_once(site: Site) -> None:  # noqa: F811
    path = f"/api/v2/users/{site.user_id}/authentication-tokens"
    later = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    body = {"data": {"attributes": {"description": "ci", "expired-at": later.strftime("%Y-%m-%dT%H:%M:%SZ")}}}
    created = site.client.post(path, json=body, headers=site.user)
    assert created.status_code == 201, created.text
    token = created.json()["data"]
    assert token["type"] == "authentication-tokens" and token["attributes"]["token"]
    assert datetime.fromisoformat(token["attributes"]["expired-at"].replace("Z", "+00:00")) == later
    read = site.client.get(f"/api/v2/authentication-tokens/{token['id']}", headers=site.user).json()["data"]
    assert read["attributes"]["token"] is None
    assert read["attributes"]["expired-at"] == token["attributes"]["expired-at"]
    listed = site.client.get(path, headers=site.user).json()["data"]
    assert token["id"] in [t["id"] for t in listed]
    past = {"data": {"attributes": {"expired-at": "2001-01-01T00:00:00Z"}}}
    dead = site.client.post(path, json=past, headers=site.user).json()["data"]["attributes"]["token"]
    assert site.client.get("/api/v2/account/details", headers={"Authorization": f"Bearer {dead}"}).status_code == 401
    assert (
        site.client.post(path, json={"data": {"attributes": {"expired-at": "soon"}}}, headers=site.user).status_code
        == 422
    )
    assert (
        site.client.post(path, json={"data": {"type": "authentication-tokens"}}, headers=site.user).status_code == 201
    )
    other = f"/api/v2/users/{site.user_id}/authentication-tokens"
    assert site.client.get(other, headers=site.admin).status_code == 200  # a site admin may
    assert site.client.delete(f"/api/v2/authentication-tokens/{token['id']}", headers=site.user).status_code == 204


def test_a_user_token_asked_for_without_an_expiry_expires_two_years_later(site: Site) -> None:  # noqa: F811
    """As HCP Terraform's (go-tfe v1.109's `TestUserTokens_Create`: `expired-at` is `created-at` plus two years)."""
    path = f"/api/v2/users/{site.user_id}/authentication-tokens"
    created = site.client.post(path, json={"data": {"attributes": {}}}, headers=site.user)
    assert created.status_code == 201, created.text
    attrs = created.json()["data"]["attributes"]
    born = datetime.fromisoformat(attrs["created-at"].replace("Z", "+00:00"))
    expires = datetime.fromisoformat(attrs["expired-at"].replace("Z", "+00:00"))
    assert abs(expires - born.replace(year=born.year + 2)) < timedelta(minutes=1)
