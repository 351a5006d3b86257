"""TFE's admin settings (/api/v2/admin/*-settings) are real settings: the site admin's only, secrets write-only,
bad values a 422, and read by what they govern (the mail, organization creation, the default remote state access,
the workload identity signing keys)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from smtp_receiver import smtp_receiver
from terrace.bootstrap import Container, build_memory
from terrace.config import Settings
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app

SECTIONS = ("general", "cost-estimation", "customization", "saml", "smtp", "twilio", "scim")


@dataclass
class Site:
    container: Container
    client: TestClient
    admin: dict[str, str]
    user: dict[str, str]


def _headers(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}", "Content-Type": "application/vnd.api+json"}


@pytest.fixture(scope="module")
def site() -> Site:
    container = build_memory(Settings(table_name="memory", blob_bucket="memory", url_signing_secret="test-secret"))
    admin = container.accounts.create_user("root", "root@example.com", site_admin=True)
    user = container.accounts.create_user("alice", "alice@example.com")
    admin_h = _headers(container.accounts.issue_token(PrincipalKind.USER, admin.id).secret)
    user_h = _headers(container.accounts.issue_token(PrincipalKind.USER, user.id).secret)
    client = TestClient(create_app(container))
    body = {"data": {"type": "organizations", "attributes": {"name": "acme", "email": "ops@acme.example"}}}
    assert client.post("/api/v2/organizations", json=body, headers=admin_h).status_code == 201
    return Site(container, client, admin_h, user_h)


def _patch(site: Site, section: str, attrs: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    body = {"data": {"type": f"{section}-settings", "attributes": attrs}}
    return site.client.patch(f"/api/v2/admin/{section}-settings", json=body, headers=headers or site.admin)


@pytest.mark.parametrize("section", SECTIONS)
def test_each_section_is_the_site_admins_only(site: Site, section: str) -> None:
    got = site.client.get(f"/api/v2/admin/{section}-settings", headers=site.admin)
    assert got.status_code == 200, got.text
    assert got.json()["data"]["id"] == section and got.json()["data"]["type"] == f"{section}-settings"
    assert site.client.get(f"/api/v2/admin/{section}-settings", headers=site.user).status_code == 404
    assert _patch(site, section, {}, site.user).status_code == 404


def test_secrets_are_write_only(site: Site) -> None:
    secrets = {
        "smtp": ("password", "smtp-pass-123"),
        "twilio": ("auth-token", "twilio-tok-456"),
        "saml": ("private-key", "saml-key-789"),
        "cost-estimation": ("aws-secret-key", "aws-secret-000"),
    }
    for section, (key, value) in secrets.items():
        changed = _patch(site, section, {key: value})
        assert changed.status_code == 200, changed.text
        assert value not in changed.text
        assert value not in site.client.get(f"/api/v2/admin/{section}-settings", headers=site.admin).text
    stored = json.dumps([site.container.table.get("admin#settings", s) for s in secrets], default=str)
    assert not any(value in stored for _key, value in secrets.values())  # sealed at rest


@pytest.mark.parametrize(
    ("section", "attrs"),
    [
        ("smtp", {"auth": "plained"}),
        ("smtp", {"port": "25"}),
        ("saml", {"signature-digest-method": "SHA1234"}),
        ("saml", {"provider-type": "error"}),
        ("general", {"api-rate-limit": -1}),
        ("general", {"plan-timeout": "soon"}),
        ("customization", {"support-email-address": "not an address"}),
        ("scim", {"site-admin-group-scim-id": "this-group-doesnt-exist"}),
    ],
)
def test_bad_values_are_a_422(site: Site, section: str, attrs: dict[str, Any]) -> None:
    answer = _patch(site, section, attrs)
    assert answer.status_code == 422, answer.text
    assert answer.json()["errors"][0]["source"]["pointer"].startswith("/data/attributes/")


def test_saml_keeps_the_old_idp_certificate_until_revoked(site: Site) -> None:
    _patch(site, "saml", {"idp-cert": "first"})
    assert _patch(site, "saml", {"idp-cert": "second"}).json()["data"]["attributes"]["old-idp-cert"] == "first"
    revoked = site.client.post("/api/v2/admin/saml-settings/actions/revoke-old-certificate", headers=site.admin)
    assert revoked.status_code == 200
    assert revoked.json()["data"]["attributes"]["old-idp-cert"] == ""
    assert revoked.json()["data"]["attributes"]["idp-cert"] == "second"


def test_invitations_go_through_the_admins_smtp_server(site: Site) -> None:
    with smtp_receiver() as inbox:
        settings = {"enabled": True, "host": "127.0.0.1", "port": inbox.port, "sender": "terrace@acme.example",
                    "auth": "none", "test-email-address": "admin@acme.example"}  # fmt: skip
        changed = _patch(site, "smtp", settings)
        assert changed.status_code == 200, changed.text
        assert changed.json()["meta"]["test-email"]["sent"] is True
        assert [to for to, _data in inbox.messages] == [["admin@acme.example"]]  # the test message
        body = {"data": {"type": "organization-memberships", "attributes": {"email": "new.person@acme.example"}}}
        invited = site.client.post("/api/v2/organizations/acme/organization-memberships", json=body, headers=site.admin)
        assert invited.status_code == 201, invited.text
        assert inbox.messages[-1][0] == ["new.person@acme.example"]
        assert b"acme" in inbox.messages[-1][1] and b"From: terrace@acme.example" in inbox.messages[-1][1]
    assert _patch(site, "smtp", {"enabled": False}).status_code == 200


def test_a_test_email_that_fails_is_reported_not_refused(site: Site) -> None:
    with smtp_receiver() as inbox:
        port = inbox.port  # closed again: nothing listens there
    settings = {"enabled": True, "host": "127.0.0.1", "port": port, "test-email-address": "admin@acme.example"}
    stored = _patch(site, "smtp", settings)
    assert stored.status_code == 200, stored.text  # as TFE: an unreachable server does not refuse the settings
    assert stored.json()["meta"]["test-email"]["sent"] is False and stored.json()["meta"]["test-email"]["detail"]
    assert "test-email" not in stored.json()["data"]["attributes"]
    assert _patch(site, "smtp", {"enabled": False}).status_code == 200


def test_limit_user_organization_creation(site: Site) -> None:
    assert _patch(site, "general", {"limit-user-organization-creation": True}).status_code == 200
    try:
        for name, headers, status in (("by-alice", site.user, 403), ("by-root", site.admin, 201)):
            body = {"data": {"type": "organizations", "attributes": {"name": name, "email": "o@x.example"}}}
            assert site.client.post("/api/v2/organizations", json=body, headers=headers).status_code == status
    finally:
        _patch(site, "general", {"limit-user-organization-creation": False})
    body = {"data": {"type": "organizations", "attributes": {"name": "by-alice", "email": "o@x.example"}}}
    assert site.client.post("/api/v2/organizations", json=body, headers=site.user).status_code == 201


def test_default_remote_state_access_is_a_new_workspaces_default(site: Site) -> None:
    def create(name: str) -> bool:
        body = {"data": {"type": "workspaces", "attributes": {"name": name}}}
        made = site.client.post("/api/v2/organizations/acme/workspaces", json=body, headers=site.admin)
        assert made.status_code == 201, made.text
        return bool(made.json()["data"]["attributes"]["global-remote-state"])

    assert create("before") is False
    assert _patch(site, "general", {"default-remote-state-access": True}).status_code == 200
    assert create("after") is True
    _patch(site, "general", {"default-remote-state-access": False})


def test_general_timeouts_are_one_setting_under_both_names(site: Site) -> None:
    attrs = _patch(site, "general", {"apply-timeout": "2h", "plan-timeout": "30m"}).json()["data"]["attributes"]
    assert (attrs["apply-timeout"], attrs["terraform-build-worker-apply-timeout"]) == ("2h", "2h")
    assert (attrs["plan-timeout"], attrs["terraform-build-worker-plan-timeout"]) == ("30m", "30m")


def test_oidc_rotate_adds_a_key_and_trim_keeps_only_the_newest(site: Site) -> None:
    def kids() -> list[str]:
        return [k["kid"] for k in site.client.get("/.well-known/jwks").json()["keys"]]

    before = kids()
    for action in ("rotate-key", "trim-key"):
        assert site.client.post(f"/api/v2/admin/oidc-settings/actions/{action}", headers=site.user).status_code == 404
    assert site.client.post("/api/v2/admin/oidc-settings/actions/rotate-key", headers=site.admin).status_code == 204
    rotated = kids()
    assert len(rotated) == len(before) + 1
    assert site.client.post("/api/v2/admin/oidc-settings/actions/rotate-key", headers=site.admin).status_code == 204
    assert len(kids()) == len(before) + 2
    assert site.client.post("/api/v2/admin/oidc-settings/actions/trim-key", headers=site.admin).status_code == 204
    trimmed = kids()
    assert len(trimmed) == 1 and trimmed[0] not in rotated
    token = site.container.workload_issuer.sign({"sub": "x"})  # the one key left signs at once
    assert json.loads(__import__("base64").urlsafe_b64decode(token.split(".")[0] + "=="))["kid"] == trimmed[0]


def test_customization_shows_in_the_web_ui(site: Site) -> None:
    attrs = {"support-email-address": "help@acme.example", "login-help": "<div>Ask the platform team</div>",
             "footer": "<p>Acme internal</p>", "new-user": "New here? Ask for a token"}  # fmt: skip
    assert _patch(site, "customization", attrs).status_code == 200
    page = site.client.get("/app/sign-in").text
    assert "Ask the platform team" in page and "<div>Ask the platform team" not in page  # shown as text
    assert "Acme internal" in page and "mailto:help@acme.example" in page and "New here?" in page
    _patch(site, "customization", dict.fromkeys(attrs, ""))
    assert "Acme internal" not in site.client.get("/app/sign-in").text
