"""Sensitive values are masked by the runner before they leave it: in the log chunks it sends, in its own
stdout lines, in the error it reports and in the plan JSON it uploads, even when a value is split
across writes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from runner_fakes import PLAN_JSON, FakeApi, make_spec, tarball
from terrace.domain.jobs import RunVariable
from terrace.domain.masking import MASK, Masker, StreamMasker, forms
from terrace.runner.logstream import LogStream
from test_runner_job import run_job

SECRET = 'pa"ss<wörd>-42'


def _all_splits(data: bytes) -> list[list[bytes]]:
    return [[data[:i], data[i:j], data[j:]] for i in range(len(data) + 1) for j in range(i, len(data) + 1)]


def test_forms_cover_what_terraform_prints() -> None:
    found = forms(SECRET)
    assert SECRET.encode() in found
    assert json.dumps(SECRET)[1:-1].encode() in found  # JSON, ASCII-escaped
    assert b'pa\\"ss\\u003cw\xc3\xb6rd\\u003e-42' in found  # Go's encoding/json escapes < > &
    assert Masker(["abc"]).mask(b"abc abc") == b"abc abc"  # too short to mask without destroying the log


def test_a_secret_split_anywhere_across_pieces_is_masked() -> None:
    masker = Masker([SECRET, "another-value"])
    text = f"before {SECRET} middle {json.dumps(SECRET)} another-value after\n".encode()
    expected = masker.mask(text)
    assert SECRET.encode() not in expected and expected.count(MASK) == 3
    for pieces in _all_splits(text):
        stream = StreamMasker(masker)
        out = b"".join(stream.feed(p) for p in pieces) + stream.flush()
        assert out == expected, pieces


def test_log_stream_masks_the_chunks_it_sends_and_the_lines_it_prints() -> None:
    text = f"output: {SECRET}\nenv {SECRET}{SECRET}\n".encode()
    for cut in range(1, len(text)):
        sent: list[bytes] = []
        echo = io.StringIO()
        stream = LogStream(
            lambda _o, c, out=sent: out.append(c), job_id="j", redact=[SECRET], echo_to=echo, flush_s=0.01
        )
        stream.write(text[:cut])
        stream.write(text[cut:])
        stream.close()
        body = b"".join(sent)
        assert body == b"output: ***\nenv ******\n", cut
        assert "ss<w" not in echo.getvalue() and "***" in echo.getvalue()


@pytest.mark.parametrize("category", ["env", "terraform"])
def test_runner_job_masks_log_error_and_plan_json(tmp_path: Path, category: str) -> None:
    secret = 's3cr3t-"value"-x'
    show = {
        **PLAN_JSON,
        "variables": {"db_password": {"value": secret}, "region": {"value": "eu-west-1"}},
        "planned_values": {"root_module": {"resources": [{"values": {"command": f"echo {secret}"}}]}},
    }
    key = "DB_PASSWORD" if category == "env" else "db_password"
    variables = [
        RunVariable(key="region", value="eu-west-1", category="terraform"),
        RunVariable(key=key, value=secret, category=category, sensitive=True),  # type: ignore[arg-type]
    ]
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    # the fake plan prints the value split over two writes (a flush in between), then JSON-escaped, then fails
    body = f"printf 's3cr3t-'; sleep 0.3; printf '\"value\"-x\\n'; echo '{json.dumps(secret)}'"
    report, _, _, _ = run_job(tmp_path, fake, make_spec("plan", variables=variables), plan_body=body, show_json=show)
    assert report.status == "finished", report.error_message
    log = bytes(fake.logs["plan-abc"])
    assert b"s3cr3t" not in log and b"value" not in log and log.count(MASK) >= 2
    assert "plan.json" in fake.blobs, (report, log)
    uploaded = json.loads(fake.blobs["plan.json"])
    assert secret not in json.dumps(uploaded) and "s3cr3t" not in fake.blobs["plan.json"].decode()
    assert uploaded["variables"]["region"] == {"value": "eu-west-1"}
    if category == "terraform":
        assert uploaded["variables"]["db_password"] == {"value": None}


def test_runner_reports_a_failure_without_the_secret(tmp_path: Path) -> None:
    secret = "s3cr3t-value-x"
    variables = [RunVariable(key="DB_PASSWORD", value=secret, category="env", sensitive=True)]
    failing = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    spec = make_spec("plan", variables=variables)
    report, _, _, _ = run_job(tmp_path, failing, spec, plan_body='echo "bad $DB_PASSWORD" >&2', plan_exit=1)
    assert report.status == "errored" and "bad ***" in (report.error_message or "")
    assert "s3cr3t" not in (report.error_message or "") and b"s3cr3t" not in bytes(failing.logs["plan-abc"])
