"""Terrace's own signed URLs (`domain/url_signing.py`): one signer, a purpose per kind of URL, and no 500 for
anything an unauthenticated client puts in one (non-ASCII signatures, offsets and limits past any log)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import terrace
from fastapi.testclient import TestClient
from itsdangerous import Signer
from run_helpers import make_run_env
from terrace.bootstrap import Container, build_embedded
from terrace.config import Settings
from terrace.services.access.web_sessions import SALT as SESSION_SALT
from terrace.web.app import create_app

PACKAGE = Path(terrace.__file__).parent
# the session cookie's signer is the web sessions' own; presigned_check recomputes S3's SigV4 for the local S3 twin
NOT_URL_SIGNERS = {
    "services/access/web_sessions.py",
    "local/presigned_check.py",
    "services/runs/task_delivery.py",  # signs a run task request's body (X-TFC-Task-Signature), not a URL
    "domain/notification_payloads.py",  # signs notification bodies with their configuration's token (TFC's header)
    "runner/sigv4.py",  # AWS SigV4 of the runner's one GetCallerIdentity request (AWS's scheme, not Terrace's)
    "services/vcs/webhooks.py",  # verifies a forge delivery's X-Hub-Signature-256 (GitHub's scheme, not a URL)
    "services/vcs/app_webhooks.py",  # verifies the GitHub App delivery's X-Hub-Signature-256 (GitHub's scheme)
}


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[tuple[Container, TestClient]]:
    settings = Settings(
        table_name="embedded",
        blob_bucket="embedded",
        data_dir=str(tmp_path / "data"),
        public_url="https://testserver",
        url_signing_secret="signing-secret",
    )
    container = build_embedded(settings)
    try:
        with TestClient(create_app(container)) as client:
            yield container, client
    finally:
        container.close()


def test_no_url_is_signed_by_hand() -> None:
    signers = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if re.search(r"\bhmac\.(new|digest)\(", path.read_text())
    }
    assert signers - NOT_URL_SIGNERS == set()


def test_a_url_signature_is_itsdangerous_under_its_purpose_salt() -> None:
    """One signer for cookies and URLs: itsdangerous's HMAC-SHA256, with a salt naming the purpose."""
    from terrace.domain.url_signing import Purpose, UrlSigning

    signature = UrlSigning("secret").sign(Purpose.LOG_READ, "plan-1", 100)
    for salt, verifies in [("terrace.url.log-read", True), ("terrace.url.blob-get", False), (SESSION_SALT, False)]:
        signer = Signer("secret", salt=salt, digest_method=hashlib.sha256)
        assert signer.verify_signature(b'["plan-1",100]', signature.encode()) is verifies, salt


def test_a_session_cookie_signature_is_no_url_signature() -> None:
    from terrace.domain.url_signing import Purpose, UrlSigning

    cookie = Signer("secret", salt=SESSION_SALT, digest_method=hashlib.sha256).get_signature(b'["plan-1",100]')
    assert not UrlSigning("secret").verify(cookie.decode(), Purpose.LOG_READ, "plan-1", 100)


def test_a_signature_verifies_for_its_own_purpose_only() -> None:
    from terrace.domain.url_signing import Purpose, UrlSigning

    signing = UrlSigning("secret")
    signature = signing.sign(Purpose.BLOB_GET, "plans/run-1/plan.bin", 100, 0)
    assert signing.verify(signature, Purpose.BLOB_GET, "plans/run-1/plan.bin", 100, 0)
    assert not signing.verify(signature, Purpose.BLOB_PUT, "plans/run-1/plan.bin", 100, 0)
    assert not signing.verify(signature, Purpose.LOG_READ, "plans/run-1/plan.bin", 100, 0)
    # parts cannot run into each other
    assert not signing.verify(signature, Purpose.BLOB_GET, "plans/run-1/plan.bin\n100", 0)
    assert not signing.verify("é" * 64, Purpose.BLOB_GET, "plans/run-1/plan.bin", 100, 0)
    assert not signing.verify("not base64!", Purpose.BLOB_GET, "plans/run-1/plan.bin", 100, 0)
    assert not signing.verify("", Purpose.BLOB_GET, "plans/run-1/plan.bin", 100, 0)
    assert not UrlSigning("other").verify(signature, Purpose.BLOB_GET, "plans/run-1/plan.bin", 100, 0)


def test_only_the_canonical_spelling_of_a_signature_verifies() -> None:
    """The last base64url character of a 32-byte MAC has two unused bits: every other spelling is refused."""
    import string

    from terrace.domain.url_signing import Purpose, UrlSigning

    signing = UrlSigning("secret")
    for expires in range(8):  # several signatures, so last characters with every pattern of unused bits occur
        signature = signing.sign(Purpose.LOG_READ, "plan-1", expires)
        for other in string.ascii_letters + string.digits + "-_":
            if other != signature[-1]:
                assert not signing.verify(signature[:-1] + other, Purpose.LOG_READ, "plan-1", expires)


def test_blob_urls_minted_for_one_method_never_serve_another(embedded: tuple[Container, TestClient]) -> None:
    container, client = embedded
    blobs = container.blobs
    blobs.put("state/ws-1/sv-1.tfstate", b"kept")
    get_url = blobs.presign_get("state/ws-1/sv-1.tfstate", 60)  # type: ignore[union-attr]
    as_put = get_url.replace("method=GET", "method=PUT").split("://", 1)[1].split("/", 1)[1]
    refused = client.put("/" + as_put, content=b"evil")
    assert refused.status_code == 403 and refused.json()["errors"][0]["status"] == "403"
    assert blobs.get("state/ws-1/sv-1.tfstate") == b"kept"


@pytest.mark.parametrize("signature", ["%C3%A9", "%C3%A9" * 64, "%00", "%F0%9F%98%80" * 16])
def test_a_non_ascii_blob_signature_is_a_403(embedded: tuple[Container, TestClient], signature: str) -> None:
    container, client = embedded
    container.blobs.put("state/ws-1/sv-1.tfstate", b"kept")
    for method in ("GET", "PUT"):
        url = f"/blobs/state/ws-1/sv-1.tfstate?method={method}&expires=99999999999&max=10&signature={signature}"
        response = client.request(method, url, content=b"x" if method == "PUT" else None)
        assert response.status_code == 403, (method, response.status_code, response.text)
        assert response.json()["errors"][0]["status"] == "403"


@pytest.mark.parametrize(
    "query",
    [
        "offset=9223372036854775807&limit=10",
        "offset=9223372036854775808&limit=10",
        "offset=-1&limit=10",
        "offset=0&limit=9223372036854775807",
        "offset=0&limit=-9223372036854775808",
        "offset=1e3",
        "offset=%C3%A9",
    ],
)
def test_log_reads_past_any_log_are_a_400(query: str) -> None:
    env = make_run_env()
    run = env.create_run(env.upload_config())
    env.work_next(log=b"hello\n")
    plan = env.api("GET", f"/plans/{run['relationships']['plan']['data']['id']}").json()["data"]["attributes"]
    path = "/" + plan["log-read-url"].split("://", 1)[1].split("/", 1)[1]
    response = env.client.get(f"{path}?{query}")
    assert response.status_code == 400, (query, response.status_code, response.text)
    assert response.json()["errors"][0]["status"] == "400"
    assert env.client.get(f"{path}?offset=1&limit=5").content == b"hello"


def test_an_archived_log_read_at_any_offset_answers_nothing(embedded: tuple[Container, TestClient]) -> None:
    container, _ = embedded
    container.blobs.put("logs/plan-abc.log", b"\x02hello\n\x03")
    for offset in (9223372036854775807, 1 << 62, 1 << 41, 10**30):
        assert container.logs.read("plan-abc", offset, 10, final=True, archived=True) == b""
    assert container.logs.read("plan-abc", 1, 5, final=True, archived=True) == b"hello"
    assert container.logs.read("plan-abc", 0, 10**30, final=True, archived=True) == b"\x02hello\n\x03"
