"""The agent's side of Hold Your Own Key (`runner/hyok_state.py`), in process against a fake API: it decrypts the
current state with its own key wrapper into the run's local backend, seals the new state and uploads it with the
sanitized copy (the sensitive value leaves the agent only as ciphertext), seals and reopens a saved plan, and a
revoked key version stops the run with the API's reason. Once with the memory key ring, once with AWS KMS (moto) as
the customer's role: the agent's data key path on AWS."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from runner_fakes import make_spec
from terrace.adapters.key_wrapper import CustomerKey
from terrace.adapters.kms_key_wrapper import KmsKeyWrapper
from terrace.adapters.memory_key_wrapper import MemoryKeyWrapper
from terrace.domain.sanitized_state import REDACTED
from terrace.runner import hyok_envelope as envelope
from terrace.runner.hyok_state import STATE_FILE, HyokAgent
from terrace.runner.job_folder import JobFolder
from terrace.runner.job_setup import Job, JobFailed

SECRET = "agent-side-s3cret"
ROLE = "arn:aws:iam::123456789012:role/customer"


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        self.lines.append(text)


class _Blobs:
    """The stored ciphertext a presigned URL would serve (`Transfers.download`'s shape)."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def download(self, url: str, dest: Path, max_bytes: int, what: str) -> int:
        dest.write_bytes(self.objects[url])
        return len(self.objects[url])

    def upload(self, url: str, source: Path, what: str) -> None:
        self.objects[url] = source.read_bytes()


def _state(serial: int) -> bytes:
    return json.dumps({"version": 4, "serial": serial, "lineage": "lin", "terraform_version": "1.11.0",
                       "outputs": {"pw": {"value": SECRET, "type": "string", "sensitive": True}},
                       "resources": []}).encode()  # fmt: skip


def _agent(
    wrapper: Any, key: CustomerKey, tmp_path: Path, revoked: bool = False, too_large: bool = False
) -> tuple[Any, ...]:
    """An agent on a fake API whose workspace's current state (serial 1) is sealed with `key`; the uploads land in
    the returned list."""
    context = {"workspace": "ws-h", "purpose": "state"}
    blobs, uploads = _Blobs(), []
    current = envelope.new_data_key(wrapper, key, context)
    blobs.objects["https://blobs/sv-1"] = envelope.seal(current.plaintext, _state(1), context)
    answer = {"hyok_configuration_id": "hyokc-1", "kek_id": key.kek_id, "oidc_kind": key.oidc_kind,
              "kms_options": key.kms_options, "oidc": key.oidc, "web_identity_token": "h.c.s", "context": context,
              "state": {"state_version_id": "sv-1", "download_url": "https://blobs/sv-1", "serial": 1, "lineage": "lin",
                        "encrypted_dek": current.wrapped, "context": context}}  # fmt: skip

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/hyok-plan-key"):  # the sealed plan's data key, recorded by the server
            recorded = json.loads(request.content)
            assert request.headers["Authorization"] == "Bearer runner-token" and recorded["key_version"]
            answer["plan"] = {"data_key_id": "dek-p", "encrypted_dek": recorded["encrypted_dek"],
                              "context": recorded["context"]}  # fmt: skip
            return httpx.Response(200, json={"data_key_id": "dek-p"})
        if request.url.path.endswith("/hyok-key"):
            assert request.headers["Authorization"] == "Bearer runner-token"
            if revoked:
                detail = "this state was encrypted with data key dek-1, wrapped by customer key version k/1, which is "
                return httpx.Response(409, json={"errors": [{"detail": detail + "revoked: it can no longer be read"}]})
            return httpx.Response(200, json=answer)
        assert request.headers["Authorization"] == "Bearer run-token"
        sent = json.loads(request.content)
        if too_large and "state" in sent["data"]["attributes"]:  # the API's inline limit
            return httpx.Response(413, json={"errors": [{"detail": "inline state is too large"}]})
        uploads.append(sent)
        urls = {
            "hosted-state-upload-url": "https://blobs/put-sv-2",
            "sanitized-state-upload-url": "https://blobs/put-san",
        }
        return httpx.Response(201, json={"data": {"id": "sv-2", "attributes": urls}})

    agent = HyokAgent("https://terrace.example", "runner-token", "agent-1", blobs, wrapper,  # type: ignore[arg-type]
                      transport=httpx.MockTransport(handle))  # fmt: skip
    folder = JobFolder.new(tmp_path, "job-", None)
    spec = make_spec("apply", hyok=True, run_token="run-token", workspace_id="ws-h")
    job = Job(spec, folder, _Log(), None, cwd=folder.config)  # type: ignore[arg-type]
    agent.blobs = blobs  # type: ignore[attr-defined]
    return agent, job, uploads


def _round_trip(wrapper: Any, key: CustomerKey, tmp_path: Path) -> None:
    agent, job, uploads = _agent(wrapper, key, tmp_path)
    agent.pull(job)
    assert json.loads((job.cwd / STATE_FILE).read_bytes())["outputs"]["pw"]["value"] == SECRET
    (job.cwd / STATE_FILE).write_bytes(_state(2))  # what the apply wrote
    agent.push(job)
    (sent,) = uploads
    attrs = sent["data"]["attributes"]
    sealed = base64.b64decode(attrs["state"])
    assert envelope.is_sealed(sealed) and SECRET.encode() not in sealed and attrs["serial"] == 2
    sanitized = json.loads(base64.b64decode(attrs["sanitized-state"]))
    assert sanitized["outputs"]["pw"]["value"] == REDACTED
    opened = envelope.open_data_key(wrapper, key, attrs["hyok-encrypted-dek"], attrs["hyok-context"])
    assert envelope.unseal(opened, sealed, attrs["hyok-context"]) == _state(2)
    plan = job.folder.write("plan.tfplan", b"PK-plan-with-" + SECRET.encode())
    sealed_plan = agent.seal_plan(job, plan)
    assert SECRET.encode() not in sealed_plan.read_bytes()
    agent.open_plan(job, sealed_plan)
    assert sealed_plan.read_bytes() == b"PK-plan-with-" + SECRET.encode()
    agent.close()


def test_a_sealed_plan_opens_only_with_the_data_key_the_server_recorded(tmp_path: Path) -> None:
    wrapper = MemoryKeyWrapper()
    wrapper.add("team-key")
    agent, job, _ = _agent(wrapper, CustomerKey("team-key", "aws"), tmp_path)
    plan = job.folder.write("plan.tfplan", b"PK-plan")
    sealed = agent.seal_plan(job, plan).read_bytes()
    agent.close()
    (tmp_path / "other").mkdir()  # an API that recorded no data key for this plan (or another one): not opened
    other, job2, _ = _agent(wrapper, CustomerKey("team-key", "aws"), tmp_path / "other")
    stored = job2.folder.write("plan.stored", sealed)
    with pytest.raises(JobFailed, match="not the one the server recorded"):
        other.open_plan(job2, stored)
    other.close()


def test_the_agent_decrypts_and_seals_with_its_own_key(tmp_path: Path) -> None:
    wrapper = MemoryKeyWrapper()
    wrapper.add("team-key")
    _round_trip(wrapper, CustomerKey("team-key", "aws"), tmp_path)


def test_the_agent_reaches_kms_as_the_customers_role(tmp_path: Path, moto_endpoint: str) -> None:
    arn = boto3.client("kms", endpoint_url=moto_endpoint, region_name="eu-west-1").create_key()["KeyMetadata"]["Arn"]
    wrapper = KmsKeyWrapper(region="us-east-1", endpoint_url=moto_endpoint)
    _round_trip(wrapper, CustomerKey(arn, "aws", {"key-region": "eu-west-1"}, {"role-arn": ROLE}, "h.c.s"), tmp_path)


def test_a_state_larger_than_the_inline_limit_goes_up_in_two_steps(tmp_path: Path) -> None:
    wrapper = MemoryKeyWrapper()
    wrapper.add("team-key")
    agent, job, uploads = _agent(wrapper, CustomerKey("team-key", "aws"), tmp_path, too_large=True)
    (job.cwd / STATE_FILE).write_bytes(_state(2))
    agent.push(job)
    (sent,) = uploads  # the pending version: the wrapped data key, no state in the request
    attrs = sent["data"]["attributes"]
    assert "state" not in attrs and "sanitized-state" not in attrs and attrs["hyok-encrypted-dek"]
    sealed, sanitized = agent.blobs.objects["https://blobs/put-sv-2"], agent.blobs.objects["https://blobs/put-san"]
    assert envelope.is_sealed(sealed) and SECRET.encode() not in sealed and SECRET.encode() not in sanitized
    assert json.loads(sanitized)["outputs"]["pw"]["value"] == REDACTED
    agent.close()


def test_a_revoked_key_version_stops_the_run_with_its_reason(tmp_path: Path) -> None:
    wrapper = MemoryKeyWrapper()
    wrapper.add("team-key")
    agent, job, uploads = _agent(wrapper, CustomerKey("team-key", "aws"), tmp_path, revoked=True)
    with pytest.raises(JobFailed, match="which is revoked: it can no longer be read"):
        agent.pull(job)
    assert not (job.cwd / STATE_FILE).exists() and uploads == []


def test_without_a_key_wrapper_the_runner_refuses_a_hyok_job(tmp_path: Path) -> None:
    agent, job, _ = _agent(MemoryKeyWrapper({"k": [b"\0" * 32]}), CustomerKey("k", "aws"), tmp_path)
    bare = HyokAgent("https://terrace.example", "t", "r", _Blobs(), None)  # type: ignore[arg-type]
    with pytest.raises(JobFailed, match="need an agent that reaches the customer's key"):
        bare.pull(job)
    bare.close()
    agent.close()
