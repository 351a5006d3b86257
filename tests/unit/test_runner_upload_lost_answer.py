"""A plan upload whose first PUT landed but whose answer was lost (a connection reset after the body went through,
what tests/proof/test_network_*.py's proxy does to a connection at random): the retry meets 409/412 (an upload
URL never replaces an object) and the upload is done, not failed; a first attempt refused so is still an error."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from terrace.runner.client import ApiError, Transfers

URL = "https://s3.test/bucket/plan.tfplan?signature=x"


def _store(lose_first_answer: bool, refusal: int) -> tuple[httpx.MockTransport, dict[str, bytes]]:
    stored: dict[str, bytes] = {}
    puts = []

    def handler(request: httpx.Request) -> httpx.Response:
        puts.append(request)
        if "plan" in stored:
            return httpx.Response(refusal)
        stored["plan"] = request.read()
        if lose_first_answer and len(puts) == 1:
            raise httpx.RemoteProtocolError("connection reset after the body was read")
        return httpx.Response(200)

    return httpx.MockTransport(handler), stored


@pytest.mark.parametrize("refusal", [409, 412])
def test_a_retry_finding_its_own_landed_upload_succeeds(tmp_path: Path, refusal: int) -> None:
    transport, stored = _store(lose_first_answer=True, refusal=refusal)
    source = tmp_path / "plan"
    source.write_bytes(b"binary-plan")
    Transfers(transport=transport, retry_delays=(0.0, 0.0)).upload(URL, source, "plan")
    assert stored["plan"] == b"binary-plan"


def test_a_first_attempt_refused_is_an_error(tmp_path: Path) -> None:
    transport, stored = _store(lose_first_answer=False, refusal=412)
    stored["plan"] = b"someone else's"
    source = tmp_path / "plan"
    source.write_bytes(b"binary-plan")
    with pytest.raises(ApiError):
        Transfers(transport=transport, retry_delays=(0.0, 0.0)).upload(URL, source, "plan")
