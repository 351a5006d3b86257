"""On AWS the API answers only requests CloudFront forwarded (web/origin_verify.py): the header CloudFront adds
(infra/origin_verify.py) must carry the deployment's secret; a direct call of the execute-api endpoint gets a 403."""

from __future__ import annotations

from fastapi.testclient import TestClient
from terrace.bootstrap import build_memory
from terrace.config import Settings
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app


def _client(origin_verify: str) -> tuple[TestClient, str]:
    settings = Settings(table_name="m", blob_bucket="m", url_signing_secret="s", origin_verify=origin_verify)
    container = build_memory(settings)
    admin = container.accounts.create_user("root", "root@example.com", site_admin=True)
    return TestClient(create_app(container)), container.accounts.issue_token(PrincipalKind.USER, admin.id).secret


def test_requests_without_the_cloudfront_header_are_refused() -> None:
    client, token = _client("cf-secret")
    auth = {"Authorization": f"Bearer {token}"}
    for headers in ({}, {"X-Terrace-Origin-Verify": "guess"}):
        response = client.get("/api/v2/account/details", headers={**auth, **headers})
        assert response.status_code == 403
        assert response.json()["errors"][0]["status"] == "403"
        assert response.headers["x-content-type-options"] == "nosniff"
    through = client.get("/api/v2/account/details", headers={**auth, "X-Terrace-Origin-Verify": "cf-secret"})
    assert through.status_code == 200 and through.json()["data"]["attributes"]["username"] == "root"


def test_no_secret_no_check() -> None:
    client, token = _client("")
    assert client.get("/api/v2/account/details", headers={"Authorization": f"Bearer {token}"}).status_code == 200
