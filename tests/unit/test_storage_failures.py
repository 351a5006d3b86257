"""Storage failing under a request (found by tests/proof/test_storage_*.py): the client gets a JSON:API error it
retries, 503 with `Retry-After` (507 when the disk is full), not a 500; and a stored state whose bytes were damaged
behind its record is refused (409) by the http backend and the embedded blob server, never served as good."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from fastapi.testclient import TestClient
from state_helpers import blob_url_path, embedded_env, make_env, state_bytes
from terrace.web.app import create_app


def _client_failing_with(exc: Exception, monkeypatch: pytest.MonkeyPatch) -> tuple[TestClient, dict[str, str], str]:
    env = make_env()
    inner: Any = env.container.table.inner  # type: ignore[attr-defined]  # under the held reads
    monkeypatch.setattr(inner, "get", lambda *_a, **_k: (_ for _ in ()).throw(exc))
    client = TestClient(create_app(env.container), raise_server_exceptions=False)
    return client, env.auth, env.ws_id


def _aws_error(code: str, status: int, reasons: tuple[str, ...] = ()) -> ClientError:
    body: Any = {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}}
    if reasons:
        body["CancellationReasons"] = [{"Code": reason} for reason in reasons]
    return ClientError(body, "TransactWriteItems" if reasons else "GetItem")


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (sqlite3.OperationalError("disk I/O error"), 503),
        (sqlite3.OperationalError("database is locked"), 503),
        (sqlite3.OperationalError("database or disk is full"), 507),
        (OSError(errno.EIO, "Input/output error"), 503),
        (OSError(errno.ENOSPC, "No space left on device"), 507),
        (_aws_error("ProvisionedThroughputExceededException", 400), 503),
        (_aws_error("InternalServerError", 500), 503),
        (_aws_error("SlowDown", 503), 503),
        # another transaction held an item, past the DynamoDB adapter's own retries (the proof's moto load)
        (_aws_error("TransactionConflictException", 400), 503),
        (_aws_error("TransactionCanceledException", 400, ("None", "TransactionConflict")), 503),
    ],
)
def test_a_storage_failure_answers_a_json_api_error_the_client_retries(
    exc: Exception, status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, auth, ws_id = _client_failing_with(exc, monkeypatch)
    response = client.get(f"/api/v2/workspaces/{ws_id}", headers=auth)
    assert response.status_code == status, response.text
    error = response.json()["errors"][0]
    assert error["status"] == str(status) and error["title"] in ("storage unavailable", "insufficient storage")
    assert ("retry-after" in response.headers) == (status == 503)


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("a bug"),
        _aws_error("AccessDenied", 403),
        OSError(errno.ENOENT, "No such file"),
        # a lost condition is the adapter's `ConditionFailed`: met raw here, it is a bug
        _aws_error("TransactionCanceledException", 400, ("TransactionConflict", "ConditionalCheckFailed")),
    ],
)
def test_other_errors_stay_500(exc: Exception, monkeypatch: pytest.MonkeyPatch) -> None:
    client, auth, ws_id = _client_failing_with(exc, monkeypatch)
    response = client.get(f"/api/v2/workspaces/{ws_id}", headers=auth)
    assert response.status_code == 500
    assert response.json()["errors"][0]["title"] == "internal error"


def _flip_byte_keeping_mtime(path: Path) -> None:
    """Bit rot: one byte changed, size and modification time as they were (the blob's sidecar still looks fresh)."""
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_damaged_state_blob_is_refused_not_served(tmp_path: Path) -> None:
    with embedded_env(tmp_path / "data", "local", url_signing_secret="test-secret") as env:
        env.lock()
        raw = state_bytes(1, outputs={"greeting": {"value": "hello", "type": "string"}})
        created = env.push(raw, 1)
        assert created.status_code == 201, created.text
        sv = created.json()["data"]
        download = sv["attributes"]["hosted-state-download-url"]
        assert env.client.get(download, headers=env.auth).content == raw

        stored = env.container.state_versions._find(sv["id"])  # type: ignore[attr-defined]
        _flip_byte_keeping_mtime(env.container.blobs.path_of(stored.blob_key))  # type: ignore[attr-defined]

        read = env.client.get("/state/v1/acme/prod", headers=env.auth)  # terraform's http backend
        assert read.status_code == 409, read.text
        assert b"hello" not in read.content and "does not match" in read.json()["detail"]
        fetched = env.client.get(download, headers=env.auth, follow_redirects=False)
        blob = env.client.get(blob_url_path(fetched.headers["location"])) if fetched.is_redirect else fetched
        assert blob.status_code == 409 and b"hello" not in blob.content, blob.text

        # the rest keeps working: a new version over the damaged one, read back whole
        second = state_bytes(2)
        assert env.push(second, 2).status_code == 201
        assert env.client.get("/state/v1/acme/prod", headers=env.auth).content == second


def test_a_storage_failure_is_answered_inside_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    """The error does not escape the app after its answer (uvicorn closed the keep-alive connection then, and a
    client's retry on it met "server disconnected"): the test client re-raises whatever escapes."""
    env = make_env()
    inner: Any = env.container.table.inner  # type: ignore[attr-defined]  # under the held reads
    monkeypatch.setattr(inner, "get", lambda *_a, **_k: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    response = TestClient(create_app(env.container)).get(f"/api/v2/workspaces/{env.ws_id}", headers=env.auth)
    assert response.status_code == 507


def test_a_damaged_s3_object_is_refused_not_a_500(moto_endpoint: str) -> None:
    """botocore checks S3's stored checksum as it reads and raised FlexibleChecksumError, which the http backend
    answered with a 500; the blob store says `BlobDamaged` and the state read refuses it (409) as any mismatch."""
    import boto3
    from moto.s3.models import s3_backends
    from terrace.adapters.blobs import BlobDamaged
    from terrace.adapters.s3_blobs import S3Blobs
    from terrace.domain.errors import Conflict
    from terrace.services.state.uploads import verified_state

    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    bucket = f"damaged-{os.getpid()}"
    client.create_bucket(Bucket=bucket)
    blobs = S3Blobs(client, bucket)
    raw = state_bytes(1)
    blobs.put("state/sv-1.tfstate", raw)
    stored = next(
        b for backend in s3_backends.values() for r in backend.values() for n, b in r.buckets.items() if n == bucket
    )
    key = stored.keys["state/sv-1.tfstate"]
    key.value = raw[:10] + bytes([raw[10] ^ 1]) + raw[11:]
    with pytest.raises(BlobDamaged):
        blobs.get("state/sv-1.tfstate")
    sv: Any = type("Sv", (), {"id": "sv-1", "blob_key": "state/sv-1.tfstate", "blob_version": None, "md5": "0" * 32})
    with pytest.raises(Conflict, match="does not match its record"):
        verified_state(blobs, sv)


def _http_auth(env: Any) -> dict[str, str]:
    import base64

    return {"Authorization": "Basic " + base64.b64encode(f"terraform:{env.token}".encode()).decode()}


@pytest.mark.parametrize("committed", [True, False])
def test_a_state_write_whose_answer_was_lost_keeps_its_blob(committed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The transaction committed but its answer was lost (a timeout after DynamoDB committed, a disk error at
    SQLite's commit): the failed write's cleanup deleted the blob of the version it had just made current, whose
    every read then answered 409 "does not match its record". A transaction that did not commit still leaves no
    blob behind."""
    env = make_env()
    inner: Any = env.container.table.inner  # type: ignore[attr-defined]  # under the held reads
    transact = inner.transact
    failures = [sqlite3.OperationalError("disk I/O error")]

    def lost_answer(ops: Any) -> None:
        if failures and any(getattr(op, "item", {}).get("sk") == "sv" for op in ops):
            if committed:
                transact(ops)
            raise failures.pop()
        transact(ops)

    monkeypatch.setattr(inner, "transact", lost_answer)
    client = TestClient(create_app(env.container))
    raw = state_bytes(1)
    written = client.post("/state/v1/acme/prod", content=raw, headers=_http_auth(env))
    assert written.status_code == 503, written.text
    read = client.get("/state/v1/acme/prod", headers=_http_auth(env))
    blobs = env.container.blobs.objects  # type: ignore[attr-defined]
    if committed:
        assert read.status_code == 200 and read.content == raw, read.text
    else:
        assert read.status_code == 204 and not any(key.startswith("state/") for key in blobs)
    again = client.post("/state/v1/acme/prod", content=raw, headers=_http_auth(env))  # the client's retry
    assert again.status_code == 200
    assert client.get("/state/v1/acme/prod", headers=_http_auth(env)).content == raw
