"""The site auditor (a user flag, `grant_auditor`) reads every organization's settings and audit trail and nothing
else: every route of the app, walked as an auditor over an organization that holds one of everything
(`test_gets_never_write._seed`), answers with data only on the routes named here; no write of any route succeeds
and none writes to the table. Decided in `services/access/authz.py` (`action_rules.AUDITOR`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent))

from app_routes import routes  # noqa: E402
from run_helpers import RunEnv, make_run_env  # noqa: E402
from table_writes import spy_writes  # noqa: E402
from terrace.domain.principal import PrincipalKind  # noqa: E402
from terrace.web.audit_trail import MUTATING  # noqa: E402
from terrace.web.ui.session import COOKIE  # noqa: E402
from test_gets_never_write import _basic, _gets, _seed, _url  # noqa: E402

# what an auditor reads of an organization: its record and settings, its audit trail
ORGANIZATION_READS = {
    "/api/v2/organizations",
    "/api/v2/organizations/{name}",
    "/api/v2/organizations/{name}/entitlement-set",
    "/api/v2/organizations/{org}/token-ttl-policies",
    "/api/v2/organizations/{organization}/audit-trail",
    "/app/{organization}/settings",
    "/app/{organization}/settings/audit-trail",
}
# the site's own: its audit trail and the recorder's counts
SITE_READS = {"/api/v2/admin/audit-trail", "/api/v2/admin/audit-trail/status"}
# what answers anyone: discovery, health, the API description, one's own account, sign-in pages, and a plan log's
# signed URL (a capability: whoever holds it reads it, the auditor was handed none and it was made for the walk)
ANYONE = {
    "/", "/.well-known/jwks", "/.well-known/openid-configuration", "/.well-known/terraform.json",
    "/api/meta/ip-ranges", "/api/openapi.json", "/api/v2/ping", "/api/v2/account/details", "/app",
    "/api/v2/users/{user_id}", "/api/v2/users/{user_id}/authentication-tokens",  # the auditor's own account
    "/app/account/tokens", "/app/sign-in", "/api/v2/logs/{phase_id}/{expires}/{signature}",
    "/api/v2/organization-memberships", "/api/v2/github-app/installations",
    "/app/{organization}",  # a redirect to the workspaces page (which answers 404)
    "/app/{organization}/{name}/runs/{run_id}",  # a redirect to the run's page (which answers 404)
    "/auth/{client_id}", "/auth/{client_id}/callback",  # a VCS provider's OAuth redirects (no client: to an error)
}  # fmt: skip
# writes an auditor may make: signing itself in and out, its own tokens (its account, not an organization's)
OWN_WRITES = {"/app/sign-in", "/app/sign-out", "/app/account/tokens", "/api/v2/users/{user_id}/authentication-tokens"}


@pytest.fixture(scope="module")
def audited() -> tuple[RunEnv, dict[str, str], str]:
    env = make_run_env()
    ids = _seed(env)
    c = env.container
    c.users.set_flags(ids["user_id"], site_admin=False)  # the seeding needed a site admin; the walk has none
    auditor = c.accounts.create_user("audrey", "audrey@example.com")
    c.users.set_flags(auditor.id, site_auditor=True)
    return env, {**ids, "user_id": auditor.id}, c.accounts.issue_token(PrincipalKind.USER, auditor.id).secret


def _as(env: RunEnv, token: str, path: str) -> dict[str, str]:
    cookie, _ = env.container.web_sessions.sign_in(token)
    env.client.cookies.set(COOKIE, cookie)
    headers = {"Authorization": f"Bearer {token}"}
    return {"Authorization": _basic(headers)} if path.startswith("/state/v1") else headers


def test_an_auditor_reads_every_organizations_settings_and_trail_and_nothing_else(
    audited: tuple[RunEnv, dict[str, str], str],
) -> None:
    env, ids, token = audited
    answered = {}
    for path in _gets(env.client.app):
        response = env.client.get(_url(path, ids), headers=_as(env, token, path), follow_redirects=False)
        assert response.status_code < 500, f"GET {path}: {response.status_code} {response.text[:300]}"
        if response.status_code < 400:
            answered[path] = response.status_code
    assert set(answered) - ORGANIZATION_READS - SITE_READS - ANYONE == set(), answered
    assert set(answered) >= ORGANIZATION_READS | SITE_READS


def test_no_write_of_an_auditor_succeeds(
    audited: tuple[RunEnv, dict[str, str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    env, ids, token = audited
    writes = spy_writes(env.container.table, monkeypatch)
    succeeded: dict[str, Any] = {}
    for route in routes(env.client.app.routes):
        for method in sorted((getattr(route, "methods", None) or set()) & MUTATING):
            if route.path in OWN_WRITES or route.path.startswith(("/scim/v2", "/api/runner", "/api/agent")):
                continue  # SCIM, runners and agents take their own tokens, never a user's
            headers = _as(env, token, route.path)
            writes.clear()
            response = env.client.request(
                method, _url(route.path, ids), headers=headers, json={}, follow_redirects=False
            )
            if response.status_code < 400 or writes:
                succeeded[f"{method} {route.path}"] = (response.status_code, writes[:3])
    assert succeeded == {}
