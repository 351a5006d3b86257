"""Fakes for runner tests: an in-process runner API + presigned S3 (httpx MockTransport), a fake terraform."""

from __future__ import annotations

import io
import json
import tarfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from job_uids import traversable
from terrace.domain.jobs import FinishRequest, JobSpec, Operation, RunVariable
from terrace.runner.client import RunnerApi, Transfers
from terrace.runner.config import RunnerConfig

SECRET = "runner-token-xyz"
API = "https://terrace.test"
S3 = "https://s3.test/bucket"


def tarball(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@dataclass
class FakeApi:
    """The runner side of /api/runner plus a blob store behind presigned-looking URLs."""

    specs: dict[str, JobSpec] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    logs: dict[str, bytearray] = field(default_factory=dict)
    log_offsets: dict[str, list[int]] = field(default_factory=dict)
    finished: dict[str, FinishRequest] = field(default_factory=dict)
    heartbeats: int = 0
    cancel_after: int | None = None  # heartbeat count after which cancel is returned
    force_after: int | None = None
    cancel_when_logged: bytes | None = None  # heartbeats answer cancel once the job's log holds these bytes
    queued: list[str] = field(default_factory=list)  # job ids /jobs/next hands out, in order
    applying: list[str] = field(default_factory=list)  # jobs announced with POST .../applying
    applying_status: int = 200  # what .../applying answers (409: the API refuses the apply)
    s3_auth_headers: list[str] = field(default_factory=list)
    s3_put_headers: list[dict[str, str]] = field(default_factory=list)
    finish_answers: dict[str, dict[str, Any]] = field(default_factory=dict)  # job id -> FinishResponse JSON
    held_keep: set[str] = field(default_factory=set)  # what /held-runs answers may still be applied
    held_asked: list[list[str]] = field(default_factory=list)
    # what POST .../upload-urls answers (None: 404, an API without it); the jobs it was asked for
    fresh_upload_urls: dict[str, str] | None = None
    upload_url_asks: list[str] = field(default_factory=list)
    # the module registry protocol: "org/name/provider" -> its versions answer, to the run's token only
    registry: dict[str, Any] = field(default_factory=dict)
    registry_asks: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handler(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        if url.startswith(S3):
            if "authorization" in request.headers:
                self.s3_auth_headers.append(request.headers["authorization"])
            key = url.removeprefix(S3 + "/").split("?")[0]
            if request.method == "GET":
                return httpx.Response(200, content=self.blobs[key]) if key in self.blobs else httpx.Response(404)
            if key.startswith("expired/"):
                return httpx.Response(403)  # as S3: a URL signed by a session that has ended
            if request.headers.get("if-none-match") == "*" and key in self.blobs:
                return httpx.Response(412)  # as S3: an upload that would replace an object is refused
            self.s3_put_headers.append(dict(request.headers))
            self.blobs[key] = request.read()
            return httpx.Response(200)
        if request.url.path.startswith("/api/registry/v1/modules/"):
            if request.headers.get("authorization") != "Bearer run-token-SECRET-123":
                return httpx.Response(401)
            address = request.url.path.removeprefix("/api/registry/v1/modules/").removesuffix("/versions")
            self.registry_asks.append(address)
            return httpx.Response(200, json=self.registry[address]) if address in self.registry else httpx.Response(404)
        if request.headers.get("authorization") != f"Bearer {SECRET}":
            return httpx.Response(401)
        parts = request.url.path.split("/")  # /api/runner/jobs/{id}/{verb} or /api/runner/jobs/next
        if parts[3] == "held-runs":
            asked = json.loads(request.read())["run_ids"]
            self.held_asked.append(asked)
            return httpx.Response(200, json={"runner_id": "x", "run_ids": [r for r in asked if r in self.held_keep]})
        if parts[4] == "next":
            with self.lock:
                if not self.queued:
                    return httpx.Response(204)
                return httpx.Response(200, content=self.specs[self.queued.pop(0)].model_dump_json())
        job_id, verb = parts[4], parts[5]
        with self.lock:
            if verb == "heartbeat":
                self.heartbeats += 1
                force = self.force_after is not None and self.heartbeats >= self.force_after
                cancel = self.cancel_after is not None and self.heartbeats >= self.cancel_after
                if self.cancel_when_logged is not None:
                    cancel = cancel or self.cancel_when_logged in bytes(self.logs.get(job_id, b""))
                return httpx.Response(200, json={"cancel": cancel or force, "force_cancel": force})
            if verb == "applying":
                self.applying.append(job_id)
                if self.applying_status != 200:
                    return httpx.Response(self.applying_status, json={"errors": [{"status": "409"}]})
                return httpx.Response(200, json={"cancel": False, "force_cancel": False})
            if verb == "logs":
                offset = int(request.url.params["offset"])
                buf = self.logs.setdefault(job_id, bytearray())
                if offset != len(buf):
                    return httpx.Response(409, json={"errors": [{"detail": f"offset {offset} != {len(buf)}"}]})
                self.log_offsets.setdefault(job_id, []).append(offset)
                buf += request.read()
                return httpx.Response(204)
            if verb == "upload-urls" and self.fresh_upload_urls is not None:
                self.upload_url_asks.append(job_id)
                return httpx.Response(200, json=self.fresh_upload_urls)
            if verb == "finish":
                self.finished[job_id] = FinishRequest.model_validate_json(request.read())
                if job_id in self.finish_answers:
                    return httpx.Response(200, json=self.finish_answers[job_id])
                return httpx.Response(204)
        return httpx.Response(404)

    def clients(self, runner_id: str = "runner-test") -> tuple[RunnerApi, Transfers]:
        transport = httpx.MockTransport(self.handler)
        api = RunnerApi(API, SECRET, runner_id, transport=transport, retry_delays=(0.01,), sleep=lambda s: None)
        return api, Transfers(transport=transport, retry_delays=(0.01,), sleep=lambda s: None)


def make_spec(phase: str = "plan", **overrides: Any) -> JobSpec:
    base: dict[str, Any] = {
        "job_id": f"{phase}-abc",
        "run_id": "run-abc",
        "phase": phase,
        "attempt": 1,
        "organization": "acme",
        "workspace_id": "ws-1",
        "workspace_name": "prod",
        "terraform_version": "latest",
        "operation": Operation(),
        "hostname": "terrace.test",
        "run_token": "run-token-SECRET-123",
        "configuration_url": f"{S3}/config.tar.gz",
        "plan_upload_url": f"{S3}/plan.tfplan" if phase == "plan" else None,
        "plan_json_upload_url": f"{S3}/plan.json" if phase == "plan" else None,
        "plan_file_url": f"{S3}/plan.tfplan" if phase == "apply" else None,
        "variables": [
            RunVariable(key="region", value="eu-west-1", category="terraform"),
            RunVariable(key="TF_LOG_PATH_X", value="sensitive-env-value", category="env", sensitive=True),
        ],
        "heartbeat_interval_s": 1,
    }
    base.update(overrides)
    return JobSpec(**base)


PLAN_JSON = {
    "resource_changes": [
        {"address": "a.b", "mode": "managed", "change": {"actions": ["create"]}},
        {"address": "a.c", "mode": "managed", "change": {"actions": ["delete", "create"]}},
        {"address": "a.d", "mode": "managed", "change": {"actions": ["update"]}},
        {"address": "data.x", "mode": "data", "change": {"actions": ["read"]}},
        {"address": "a.e", "mode": "managed", "change": {"actions": ["no-op"]}},
    ]
}


def reachable_by_job_uids(folder: Path) -> None:
    """As root the runner's children run as job uids: they must reach the fake binary and write its records."""
    folder.chmod(0o1777)
    traversable(folder.parent)


# `terraform test -json`'s last line for one passing test (`runner/module_tests.py` reads it)
TEST_SUMMARY = (
    'echo \'{"@level":"info","@message":"Success! 1 passed, 0 failed.","type":"test_summary",'
    '"test_summary":{"status":"pass","passed":1,"failed":0,"errored":0,"skipped":0}}\''
)


def fake_terraform(
    folder: Path,
    *,
    plan_exit: int = 2,
    plan_body: str = "",
    show_json: dict[str, Any] | None = None,
    init_body: str = "",
    show_body: str = "",
    version: str = "1.0.3",
    test_body: str = TEST_SUMMARY,
) -> Path:
    """A shell script standing in for terraform; records each call's args, env and cwd under `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    reachable_by_job_uids(folder)
    script = folder / "terraform"
    plan_json = json.dumps(show_json or PLAN_JSON)
    script.write_text(f"""#!/bin/bash
rec="{folder}"
n=$(ls "$rec"/call-*.args 2>/dev/null | wc -l)
printf '%s\\n' "$@" > "$rec/call-$n.args"
env > "$rec/call-$n.env"
pwd > "$rec/call-$n.cwd"
cmd="$1"; shift
case "$cmd" in
  version) echo '{{"terraform_version":"{version}"}}' ;;
  init) echo "Initializing the backend..."; ls > "$rec/init-files"
    key=$(printf '%s' "$GIT_SSH_COMMAND" | sed -n 's/.* -i \\([^ ]*\\) .*/\\1/p')
    if [ -n "$key" ]; then stat -c '%a %u' "$key" > "$rec/init-key-stat"; cat "$key" > "$rec/init-key"; fi
    {init_body} ;;
  plan)
    for a in "$@"; do case "$a" in -out=*) out="${{a#-out=}}" ;; esac; done
    echo "plan starting"
    {plan_body}
    echo "binary-plan" > "$out"
    echo "Plan: 2 to add, 1 to change, 1 to destroy."
    exit {plan_exit} ;;
  show) {show_body}
    echo '{plan_json}' ;;
  apply) cat "${{@: -1}}" > "$rec/applied-plan"; echo "Apply complete! Resources: 2 added, 1 changed, 1 destroyed." ;;
  query) echo '{{"@level":"info","type":"version","terraform":"{version}"}}' ;;
  test) {test_body} ;;
  *) echo "unknown $cmd" >&2; exit 1 ;;
esac
""")
    script.chmod(0o755)
    return script


def runner_config(tmp_path: Path, binary: Path, **overrides: Any) -> RunnerConfig:
    base: dict[str, Any] = {
        "api_url": API,
        "runner_token": SECRET,
        "tf_binary": str(binary),
        "runner_id": "runner-test",
        "work_dir": tmp_path / "work",
    }
    base.update(overrides)
    traversable(tmp_path)
    return RunnerConfig(**base)
