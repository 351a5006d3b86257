"""`DELETE /organizations/:org/authentication-token` (go-tfe `OrganizationTokens.Delete`): owners revoke the
organization token (204, it stops authenticating at once); without one it is a 404; members who are not owners
are refused as they are when creating one, and strangers do not see the organization."""

from __future__ import annotations

from datetime import datetime, timedelta

from run_helpers import join, make_run_env
from terrace.domain.principal import PrincipalKind

PATH = "/organizations/acme/authentication-token"


def test_owners_revoke_the_organization_token_once() -> None:
    env = make_run_env()
    secret = env.api("POST", PATH, None).json()["data"]["attributes"]["token"]
    bob = env.container.accounts.create_user("bob", "bob@example.com")
    bob_token = env.container.accounts.issue_token(PrincipalKind.USER, bob.id).secret
    as_bob = {"Authorization": f"Bearer {bob_token}"}
    assert env.client.delete(f"/api/v2{PATH}", headers=as_bob).status_code == 404  # not a member
    join(env, bob_token, "bob")
    assert env.client.delete(f"/api/v2{PATH}", headers=as_bob).status_code == 403  # a member, not an owner
    assert env.client.post(f"/api/v2{PATH}", headers=as_bob).status_code == 403  # as creating one is
    as_org = {"Authorization": f"Bearer {secret}"}
    assert env.client.get("/api/v2/organizations/acme", headers=as_org).status_code == 200

    assert env.api("DELETE", PATH).status_code == 204
    assert env.client.get("/api/v2/organizations/acme", headers=as_org).status_code == 401
    missing = env.api("DELETE", PATH)
    assert missing.status_code == 404 and missing.json()["errors"][0]["status"] == "404"
    assert env.api("GET", PATH).status_code == 404


def test_the_organization_token_names_its_creator_and_expires_two_years_later() -> None:
    """go-tfe v1.109's `TestOrganizationTokensCreate` reads `created-by` (a nil one panicked it) and
    `TestOrganizationTokens_CreateWithOptions` an `expired-at` two years after `created-at` when none was asked for."""
    env = make_run_env()
    created = env.api("POST", PATH, None)
    assert created.status_code == 201, created.text
    token = created.json()["data"]
    creator = token["relationships"]["created-by"]["data"]
    assert creator == {"type": "users", "id": env.api("GET", "/account/details").json()["data"]["id"]}
    born = datetime.fromisoformat(token["attributes"]["created-at"].replace("Z", "+00:00"))
    expires = datetime.fromisoformat(token["attributes"]["expired-at"].replace("Z", "+00:00"))
    assert abs(expires - born.replace(year=born.year + 2)) < timedelta(minutes=1)
    assert env.api("GET", PATH).json()["data"]["relationships"]["created-by"]["data"] == creator


def test_an_audit_trail_token_is_its_own_and_reads_the_audit_trail_only() -> None:
    """go-tfe's `?token=audit-trails` (HCP's audit trail token, v1.109's `TestOrganizationTokens*WithOptions`): a
    token of its own beside the organization token (creating one replaces neither the other), read and deleted by
    the same `token`; it reads its organization's audit trail and nothing else. Another kind is a 422."""
    env = make_run_env()
    secret = env.api("POST", PATH, None).json()["data"]["attributes"]["token"]
    audit = env.api("POST", f"{PATH}?token=audit-trails", None)
    assert audit.status_code == 201, audit.text
    audit_secret, audit_id = audit.json()["data"]["attributes"]["token"], audit.json()["data"]["id"]
    as_org, as_audit = {"Authorization": f"Bearer {secret}"}, {"Authorization": f"Bearer {audit_secret}"}
    assert env.client.get("/api/v2/organizations/acme", headers=as_org).status_code == 200  # not replaced
    assert env.client.get("/api/v2/organizations/acme", headers=as_audit).status_code == 404
    assert env.client.get(f"/api/v2/workspaces/{env.workspace_id}", headers=as_audit).status_code == 404
    trail = env.client.get("/api/v2/organization/audit-trail", headers=as_audit)
    assert trail.status_code == 200 and trail.json()["data"], trail.text  # this test's own actions, recorded
    assert env.api("GET", f"{PATH}?token=audit-trails").json()["data"]["id"] == audit_id
    assert env.api("GET", PATH).json()["data"]["id"] != audit_id
    assert env.api("POST", f"{PATH}?token=bogus", None).status_code == 422
    assert env.api("DELETE", f"{PATH}?token=audit-trails").status_code == 204
    assert env.api("GET", f"{PATH}?token=audit-trails").status_code == 404
    assert env.client.get("/api/v2/organizations/acme", headers=as_org).status_code == 200
