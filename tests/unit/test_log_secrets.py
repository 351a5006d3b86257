"""The server masks a workspace's sensitive values in logs (archive, live reads, tail), in errors and in
json-output-redacted, whatever the runner sent; log-read URLs are short-lived, bound to their phase and
answer 404 to anything else; the API refuses to start without a URL-signing secret."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env
from terrace.bootstrap import build_memory
from terrace.config import Settings
from terrace.services.runs import logs as logs_module
from terrace.services.runs.logs import archive_key
from terrace.web.app import create_app

ENV_SECRET = "env-secret-Zq81"
TF_SECRET = 'tf-"secret"-Kw22'


@pytest.fixture
def env() -> RunEnv:
    env = make_run_env()
    for key, value, category in (("API_TOKEN", ENV_SECRET, "env"), ("db_password", TF_SECRET, "terraform")):
        body = {
            "data": {
                "type": "vars",
                "attributes": {"key": key, "value": value, "category": category, "sensitive": True},
            }
        }
        assert env.api("POST", f"/workspaces/{env.workspace_id}/vars", body).status_code == 201
    return env


def _claim(env: RunEnv) -> dict[str, Any]:
    env.create_run(env.upload_config())
    return env.claim("r1")


def _put(env: RunEnv, job_id: str, offset: int, data: bytes) -> int:
    assert env.runner("PUT", f"/jobs/{job_id}/logs?offset={offset}", content=data).status_code == 204
    return offset + len(data)


def _finish(env: RunEnv, job_id: str, status: str = "finished", **extra: Any) -> None:
    body = {"runner_id": "r1", "status": status, "has_changes": True, **extra}
    assert env.runner("POST", f"/jobs/{job_id}/finish", json=body).status_code == 200


def _log_path(env: RunEnv, phase_id: str) -> str:
    kind = "plans" if phase_id.startswith("plan-") else "applies"
    url = env.api("GET", f"/{kind}/{phase_id}").json()["data"]["attributes"]["log-read-url"]
    return "/" + str(url).split("://", 1)[1].split("/", 1)[1]


def _read_all(env: RunEnv, path: str) -> bytes:
    response = env.client.get(f"{path}?limit=1000000&offset=0")
    assert response.status_code == 200, response.text
    return response.content


def test_live_reads_archive_and_tail_mask_what_an_unmasking_runner_sent(env: RunEnv) -> None:
    spec = _claim(env)
    job = spec["job_id"]
    offset = _put(env, job, 0, f"env is {ENV_SECRET[:7]}".encode())  # split across two PUTs
    path = _log_path(env, job)
    early = _read_all(env, path)
    assert b"env-sec" not in early  # a possible secret's beginning waits for the rest
    offset = _put(env, job, offset, f"{ENV_SECRET[7:]}\ntf is {json.dumps(TF_SECRET)} and {TF_SECRET}\n".encode())
    live = _read_all(env, path)
    assert live.startswith(early)  # what a reader saw does not change as the log grows
    assert live == b'\x02env is ***\ntf is "***" and ***\n'
    assert ENV_SECRET not in env.container.logs.tail(job, archived=False)

    _finish(env, job)
    archived = env.blobs.get(archive_key(job))
    assert archived == b'\x02env is ***\ntf is "***" and ***\n\x03'
    assert _read_all(env, path) == archived
    assert ENV_SECRET not in env.container.logs.tail(job, archived=True)


def test_an_errored_run_s_message_is_masked(env: RunEnv) -> None:
    spec = _claim(env)
    _finish(env, spec["job_id"], "errored", error_message=f"plan failed: {TF_SECRET} rejected")
    message = env.run(spec["run_id"])["attributes"].get("error-message") or ""
    events = json.dumps(env.api("GET", f"/runs/{spec['run_id']}/run-events").json())
    assert TF_SECRET not in message + events and "Kw22" not in message + events


def test_json_output_redacted_holds_no_sensitive_variable_value(env: RunEnv) -> None:
    spec = _claim(env)
    plan = {
        "variables": {"db_password": {"value": TF_SECRET}, "region": {"value": "eu"}},
        "configuration": {"root_module": {"variables": {"db_password": {}}}},  # not declared sensitive
        "resource_changes": [
            {
                "address": "null_resource.x",
                "change": {
                    "before": None,
                    "after": {"triggers": {"env": f"token={ENV_SECRET}", "tf": TF_SECRET}},
                    "after_sensitive": False,
                },
            }
        ],
    }
    key = spec["plan_json_upload_url"].split("memory://blobs/")[1].split("?")[0]
    env.blobs.put(key, json.dumps(plan).encode())
    _finish(env, spec["job_id"])
    redacted = env.api("GET", f"/plans/{spec['job_id']}/json-output-redacted")
    assert redacted.status_code == 200
    text = redacted.text
    assert ENV_SECRET not in text and TF_SECRET not in text and "Kw22" not in text
    body = redacted.json()
    assert body["variables"] == {"db_password": {"value": None}, "region": {"value": "eu"}}
    full = env.api("GET", f"/plans/{spec['job_id']}/json-output", follow_redirects=False)
    stored = env.blobs.get(full.headers["location"].split("memory://blobs/")[1].split("?")[0])
    assert ENV_SECRET.encode() not in stored and b"Kw22" not in stored  # what json-output serves
    assert body["resource_changes"][0]["change"]["after"]["triggers"] == {"env": "token=***", "tf": "***"}


def test_log_urls_expire_within_minutes_once_their_phase_ended(env: RunEnv, monkeypatch) -> None:
    spec = _claim(env)
    job = spec["job_id"]
    _put(env, job, 0, b"hello\n")
    path = _log_path(env, job)
    expires = int(path.split("/")[-2])
    assert expires - time.time() <= 10 * 60  # minutes, not hours
    real_time = time.time
    monkeypatch.setattr(logs_module.time, "time", lambda: real_time() + 3600)
    assert _read_all(env, path) == b"\x02hello\n"  # an hour-long phase: the reader started in it goes on
    monkeypatch.setattr(logs_module.time, "time", real_time)
    _finish(env, job)
    assert _read_all(env, path) == b"\x02hello\n\x03"
    monkeypatch.setattr(logs_module.time, "time", lambda: real_time() + 11 * 60)
    assert env.client.get(f"{path}?limit=10&offset=0").status_code == 404  # ended and expired


def test_log_urls_are_bound_to_their_phase_and_bad_signatures_are_404(env: RunEnv) -> None:
    spec = _claim(env)
    job = spec["job_id"]
    _put(env, job, 0, b"plan log\n")
    _finish(env, job)
    assert env.api("POST", f"/runs/{spec['run_id']}/actions/apply", {}).status_code == 202
    apply = env.work_next(log=b"apply log\n")
    plan_path = _log_path(env, job)
    assert _read_all(env, plan_path) == b"\x02plan log\n\x03"
    assert _read_all(env, _log_path(env, apply["job_id"])) == b"\x02apply log\n\x03"
    swapped = plan_path.replace(f"/{job}/", f"/{apply['job_id']}/")
    assert env.client.get(swapped).status_code == 404  # a plan URL never reads the apply log
    for bad in ("%C3%A9" * 32, "é", "zz", "0" * 64):
        prefix = plan_path.rsplit("/", 1)[0]
        response = env.client.get(f"{prefix}/{bad}?limit=10&offset=0")
        assert response.status_code == 404, (bad, response.status_code)
        assert response.json()["errors"][0]["status"] == "404"
    run_path = plan_path.replace(f"/{job}/", f"/{spec['run_id']}/")
    assert env.client.get(run_path).status_code == 404


@pytest.mark.parametrize("secret", ["", "   "])
def test_the_api_refuses_to_start_without_a_signing_secret(secret: str) -> None:
    from terrace.config import ConfigurationError

    container = build_memory(Settings(table_name="m", blob_bucket="m", url_signing_secret=secret))
    with pytest.raises(ConfigurationError, match="TERRACE_URL_SIGNING_SECRET"):
        create_app(container)
    with pytest.raises(ValueError, match="signing secret"):
        _ = container.logs
