"""A Hold Your Own Key workspace's state and plans on the agent (`terrace agent`; `docs/features/hyok.md`).

The run keeps its state in a `local` backend in its folder instead of Terrace's remote backend (`hyok_backend`):
before `init` the agent asks the API how to reach the customer's key and where the current state's ciphertext is
(`POST /api/runner/jobs/:id/hyok-key`), unwraps its data key with its own key wrapper (AWS KMS as the customer's
role, or the key file on the agent's host) and writes the plaintext state for the run (`pull`). After an apply it
seals the new state under a fresh data key, makes the sanitized copy and uploads both with the wrapped data key as
the workspace's new state version, with the run's token (`push`). A saved plan holds the prior state: it is sealed
before its upload, its wrapped data key in its own header and recorded on the server (`POST
/api/runner/jobs/:id/hyok-plan-key`, `seal_plan`); the applying agent opens it only with the key the server hands
back, which it does only while the key's customer key version is not revoked (`open_plan`). The JSON plan keeps only
what was planned, no value (`domain/sanitized_state.sanitize_plan`).
The server never holds a plaintext data key, state or plan of such a workspace.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from terrace.domain.hyok_jobs import HyokJobKey, HyokKeyRequest, HyokPlanKeyRequest
from terrace.domain.jobs import JobSpec
from terrace.runner import hyok_envelope as envelope
from terrace.runner.client import Transfers, with_retries
from terrace.runner.job_setup import Job, JobFailed

STATE_FILE = "terraform.tfstate"
MAX_STATE_BYTES = 512 * 1024 * 1024
PLAN_MAGIC = b"TERRACE-HYOK-PLAN-1\n"
HEADER_MAX = 64 * 1024


def hyok_backend(spec: JobSpec) -> str:
    """The run's state stays in its folder (`terraform.tfstate`): the agent moves it in and out, encrypted."""
    del spec
    return 'terraform {\n  backend "local" {}\n}\n'


@dataclass(frozen=True)
class AgentKey:
    """Where the customer's key is and how to reach it, as the key wrappers read it (`adapters/key_wrapper.py`'s
    `CustomerKey`: the same attributes; the runner imports no adapter, `cli.py` hands it its wrapper)."""

    kek_id: str
    oidc_kind: str
    kms_options: dict[str, str] = field(default_factory=dict)
    oidc: dict[str, str] = field(default_factory=dict)
    web_identity_token: str = field(default="", repr=False)


def _customer_key(key: HyokJobKey) -> AgentKey:
    return AgentKey(key.kek_id, key.oidc_kind, dict(key.kms_options), dict(key.oidc), key.web_identity_token)


class HyokAgent:
    def __init__(
        self,
        api_url: str,
        runner_token: str,
        runner_id: str,
        transfers: Transfers,
        wrapper: envelope.KeyWrapping | None,
        ssl_cert_file: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._runner_token, self._runner_id, self._transfers, self._wrapper = (
            runner_token,
            runner_id,
            transfers,
            wrapper,
        )
        self._http = httpx.Client(
            base_url=api_url.rstrip("/"),
            verify=ssl_cert_file or True,
            transport=transport,
            timeout=httpx.Timeout(30.0, connect=10.0),
        )

    def _wrapping(self) -> envelope.KeyWrapping:
        if self._wrapper is None:
            raise JobFailed(
                "this workspace uses Hold Your Own Key: its runs need an agent that reaches the customer's key "
                "(`terrace agent` with TERRACE_HYOK_KEY_FILE, or AWS KMS)"
            )
        return self._wrapper

    def _post(self, job: Job, route: str, body: str, what: str) -> httpx.Response:
        path = f"/api/runner/jobs/{job.spec.job_id}/{route}"
        headers = {"Authorization": f"Bearer {self._runner_token}", "Content-Type": "application/json"}
        answer = with_retries(lambda: self._http.post(path, content=body, headers=headers), what)
        if answer.status_code >= 400:
            raise JobFailed(f"Hold Your Own Key: {_detail(answer)}")
        return answer

    def key(self, job: Job) -> HyokJobKey:
        body = HyokKeyRequest(runner_id=self._runner_id).model_dump_json()
        return HyokJobKey.model_validate_json(self._post(job, "hyok-key", body, "HYOK key").content)

    def pull(self, job: Job) -> None:
        """The current state, decrypted, as the run's `terraform.tfstate` (none when the workspace has none)."""
        wrapper, key = self._wrapping(), self.key(job)
        if key.state is None:
            return
        sealed = job.folder.path / "state.sealed"
        self._transfers.download(key.state.download_url, sealed, MAX_STATE_BYTES, "encrypted state")
        blob = sealed.read_bytes()
        sealed.unlink()
        if key.state.encrypted_dek:
            try:
                data_key = envelope.open_data_key(
                    wrapper, _customer_key(key), key.state.encrypted_dek, key.state.context
                )
                blob = envelope.unseal(data_key, blob, key.state.context)
            except Exception as exc:  # noqa: BLE001 - the key service's or the envelope's reason, for the log
                raise JobFailed(f"the workspace's state could not be decrypted: {exc}") from exc
        job.folder.write_to_job(job.cwd / STATE_FILE, blob.decode())
        job.log.line(f"Hold Your Own Key: state version {key.state.state_version_id} decrypted on this agent.")

    def push(self, job: Job) -> None:
        """After an apply: the run's new state, encrypted under a fresh data key, with its sanitized copy."""
        from terrace.domain.sanitized_state import sanitize

        if not (job.cwd / STATE_FILE).exists():
            return
        copy = job.folder.copy_from_job(job.cwd / STATE_FILE, "state.out", MAX_STATE_BYTES)
        raw = copy.read_bytes()
        copy.unlink()
        try:
            state = json.loads(raw)
            serial, lineage = int(state["serial"]), str(state["lineage"])
        except (ValueError, KeyError, TypeError) as exc:
            raise JobFailed("the run's state is not a Terraform state: not uploaded") from exc
        wrapper, key = self._wrapping(), self.key(job)
        if key.state is not None and (key.state.serial, key.state.lineage) == (serial, lineage):
            return  # nothing changed
        data_key = envelope.new_data_key(wrapper, _customer_key(key), key.context)
        sealed = envelope.seal(data_key.plaintext, raw, key.context)
        attrs = {
            "serial": serial,
            "lineage": lineage,
            "md5": hashlib.md5(sealed).hexdigest(),  # noqa: S324 - the API's checksum
            "state": base64.b64encode(sealed).decode(),
            "sanitized-state": base64.b64encode(json.dumps(sanitize(state)).encode()).decode(),
            "hyok-encrypted-dek": data_key.wrapped,
            "hyok-key-version": data_key.key_version,
            "hyok-context": data_key.context,
        }
        answer = self._create_version(job, attrs)
        if answer.status_code == 413:  # larger than the API takes inline: HCP's two-step upload (`hyok_uploads.py`)
            answer = self._upload_two_step(job, attrs)
        if answer.status_code >= 400:
            raise JobFailed(f"the encrypted state could not be stored: {_detail(answer)}")
        sv_id = answer.json()["data"]["id"]
        job.log.line(f"Hold Your Own Key: state version {sv_id} stored encrypted with customer key {key.kek_id}.")

    def _create_version(self, job: Job, attrs: dict[str, object]) -> httpx.Response:
        body = {"data": {"type": "state-versions", "attributes": attrs}}
        headers = {"Authorization": f"Bearer {job.spec.run_token}"}
        path = f"/api/v2/workspaces/{job.spec.workspace_id}/state-versions"
        return with_retries(lambda: self._http.post(path, json=body, headers=headers), "state upload")

    def _upload_two_step(self, job: Job, attrs: dict[str, object]) -> httpx.Response:
        """A pending version with the wrapped data key, then the encrypted state and its sanitized copy PUT to the
        URLs it answers with; the API makes it current once both landed."""
        sealed, sanitized = (base64.b64decode(str(attrs.pop(name))) for name in ("state", "sanitized-state"))
        answer = self._create_version(job, attrs)
        if answer.status_code >= 400:
            return answer
        created = answer.json()["data"]["attributes"]
        for name, data, what in (
            ("hosted-state-upload-url", sealed, "encrypted state"),
            ("sanitized-state-upload-url", sanitized, "sanitized state"),
        ):
            blob = job.folder.write(f"{name}.upload", data)
            self._transfers.upload(str(created[name]), blob, what)
            blob.unlink()
        return answer

    def seal_plan(self, job: Job, plan: Path) -> Path:
        """The saved plan sealed under its own data key, the wrapped key in its header (`open_plan`)."""
        wrapper, key = self._wrapping(), self.key(job)
        context = {**key.context, "purpose": "plan", "run": job.spec.run_id}
        data_key = envelope.new_data_key(wrapper, _customer_key(key), context)
        record = HyokPlanKeyRequest(
            runner_id=self._runner_id,
            encrypted_dek=data_key.wrapped,
            key_version=data_key.key_version,
            context=context,
        )
        self._post(job, "hyok-plan-key", record.model_dump_json(), "HYOK plan key")  # before the plan leaves
        header = json.dumps({"dek": data_key.wrapped, "context": context}).encode()
        sealed = envelope.seal(data_key.plaintext, plan.read_bytes(), context)
        return job.folder.write("plan.sealed", PLAN_MAGIC + struct.pack(">I", len(header)) + header + sealed)

    def open_plan(self, job: Job, stored: Path) -> None:
        """The downloaded sealed plan, opened in place (the job reads it) with the data key the server recorded."""
        wrapper, key = self._wrapping(), self.key(job)
        recorded = key.plan
        blob = stored.read_bytes()
        if not blob.startswith(PLAN_MAGIC):
            raise JobFailed("the saved plan of a Hold Your Own Key workspace is not encrypted: not applied")
        (size,) = struct.unpack(">I", blob[len(PLAN_MAGIC) : len(PLAN_MAGIC) + 4])
        start = len(PLAN_MAGIC) + 4
        try:
            header = json.loads(blob[start : start + min(size, HEADER_MAX)])
            context = {**key.context, "purpose": "plan", "run": job.spec.run_id}
            if header.get("context") != context:
                raise envelope.EnvelopeError("the saved plan belongs to another run or workspace")
            if recorded is None or recorded.encrypted_dek != header.get("dek"):
                raise envelope.EnvelopeError("its data key is not the one the server recorded for this plan")
            data_key = envelope.open_data_key(wrapper, _customer_key(key), recorded.encrypted_dek, context)
            plain = envelope.unseal(data_key, blob[start + size :], context)
        except Exception as exc:  # noqa: BLE001 - the reason, for the log
            raise JobFailed(f"the saved plan could not be decrypted: {exc}") from exc
        job.folder.write(stored.name, plain, job_reads=True)

    def close(self) -> None:
        self._http.close()


def _detail(answer: httpx.Response) -> str:
    try:
        return str(answer.json()["errors"][0]["detail"])[:500]
    except (ValueError, KeyError, IndexError, TypeError):
        return f"HTTP {answer.status_code}"
