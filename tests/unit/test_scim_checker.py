"""An independent SCIM conformance checker (PyPI `scim2-tester`: RFC 7643/7644's discovery, create, read, query,
replace, delete and PATCH checks) against /scim/v2 of the in-process app, its whole suite, every check passed.
Skips when the checker is not installed (pyproject's test extra pins it; `make test` runs it)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from terrace.bootstrap import build_memory
from terrace.config import Settings
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app

scim2_tester = pytest.importorskip("scim2_tester", reason="scim2-tester is not installed (pyproject's test extra)")
scim2_client = pytest.importorskip("scim2_client")


class TestClientEngine(scim2_client.BaseSyncSCIMClient):  # type: ignore[name-defined]
    """scim2-client's synchronous engine over FastAPI's TestClient (the server runs in this process)."""

    def __init__(self, client: TestClient, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.client = client

    def _stays_under_base_url(self, endpoint: str) -> bool:
        url = self.client.build_request("GET", endpoint).url
        base = self.client.base_url
        return bool(url.scheme == base.scheme and url.host == base.host and url.raw_path.startswith(base.raw_path))

    def _parse_json(self, response: Any) -> Any:
        return response.json()

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        return self.client.request(method, url, **kwargs)


@pytest.fixture(scope="module")
def scim_client() -> TestClient:
    container = build_memory(Settings(table_name="memory", blob_bucket="memory", url_signing_secret="test-secret"))
    admin = container.accounts.create_user("root", "root@example.com", site_admin=True)
    headers = {"Authorization": f"Bearer {container.accounts.issue_token(PrincipalKind.USER, admin.id).secret}"}
    client = TestClient(create_app(container))
    for section, attrs in (
        ("saml", {"enabled": True, "sso-endpoint-url": "https://idp.example/sso", "provider-type": "entra"}),
        ("scim", {"enabled": True}),
    ):
        body = {"data": {"type": f"{section}-settings", "attributes": attrs}}
        assert client.patch(f"/api/v2/admin/{section}-settings", json=body, headers=headers).status_code == 200
    token = {"data": {"type": "authentication-tokens", "attributes": {"description": "checker"}}}
    secret = client.post("/api/v2/admin/scim-tokens", json=token, headers=headers).json()["data"]["attributes"]["token"]
    return TestClient(create_app(container), base_url="http://testserver/scim/v2",
                      headers={"Authorization": f"Bearer {secret}"})  # fmt: skip


def test_the_scim_checker_passes_every_check(scim_client: TestClient) -> None:
    """The checker's whole suite (no tag left out): discovery, every resource type's create, read, attribute
    projection, search, replace, delete and PATCH add/replace/remove. Every check must end in SUCCESS: an
    ERROR or CRITICAL (a MUST broken), a DEVIATION (a SHOULD), or a SKIPPED check fails this test."""
    results = scim2_tester.check_server(TestClientEngine(scim_client), raise_exceptions=False)
    not_passed = [f"{r.resource_type or '-'} {r.title} {r.status.name}: {r.reason}" for r in results
                  if r.status is not scim2_tester.Status.SUCCESS]  # fmt: skip
    assert not_passed == []
    covered = {(r.resource_type, tag) for r in results for tag in r.tags}
    for kind in ("User", "Group"):
        for tag in ("crud:create", "crud:read", "crud:update", "crud:delete", "patch:add", "patch:replace",
                    "patch:remove"):  # fmt: skip
            assert (kind, tag) in covered, f"the checker ran no {tag} check of {kind}"
    assert len(results) >= 70
