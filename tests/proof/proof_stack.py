"""The proof suite's stacks and state clients: a LocalStack (embedded or moto) started in-process, and clients that
write state as Terraform's http backend and go-tfe do (retrying 5xx and 429), recording every answer they got.

`check_states` is the rule every storage scenario ends with: each acknowledged write is listed, byte-identical (its
md5, read back through the download URL clients use), every listed version's bytes match its md5, the current
version is the last acknowledged one, the workspace is unlocked, and no answer was a 500.
"""

from __future__ import annotations

import base64
import hashlib
import json
import ssl
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from terrace.local.stack import LocalStack, WrapPorts

JSONAPI = "application/vnd.api+json"
RETRIES = 4  # terraform's http backend: retry_max 2 by default; go-tfe with RetryServerErrors: a few more


@contextmanager
def running_stack(
    backend: str, state_dir: Path, wrap_ports: WrapPorts | None = None, **kwargs: Any
) -> Iterator[LocalStack]:
    """A LocalStack for state clients (no workers), embedded in `state_dir/data` or on moto; stopped at the end."""
    data_dir = kwargs.pop("data_dir", state_dir / "data" if backend == "embedded" else None)
    stack = LocalStack(
        port=0,
        organization="proof",
        state_dir=state_dir,
        prefix=f"proof-{uuid.uuid4().hex[:8]}",
        workers=False,
        data_dir=data_dir,
        wrap_ports=wrap_ports,
        **kwargs,
    )
    stack.settings_overrides = {"api_rate_limit_per_s": 1000, "tool_downloads": False}  # runs use what runners hold
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def state_doc(serial: int, lineage: str) -> bytes:
    doc = {
        "version": 4,
        "terraform_version": "1.0.3",
        "serial": serial,
        "lineage": lineage,
        "outputs": {"serial": {"value": serial, "type": "number"}},
        "resources": [],
    }
    return json.dumps(doc, indent=2).encode()


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()  # noqa: S324 (what state versions record)


@dataclass
class Client:
    """One state client of a stack: HTTP with the stack's CA and admin token; counts every status it saw."""

    stack: LocalStack
    statuses: Counter[int] = field(default_factory=Counter)
    bodies_5xx: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        info = self.stack.info
        assert info is not None
        self.org = info.organization
        self.lock_left = False  # the last write's unlock was not answered: its lock is still held (terraform says so)
        self.http = httpx.Client(
            base_url=info.url,
            verify=ssl.create_default_context(cafile=info.ca_bundle),
            timeout=30,
            headers={"Authorization": f"Bearer {info.token}", "Accept": JSONAPI},
        )
        self.bare = httpx.Client(verify=ssl.create_default_context(cafile=info.ca_bundle), timeout=30)  # URLs

    def close(self) -> None:
        self.http.close()
        self.bare.close()

    def call(self, method: str, url: str, retries: int = RETRIES, **kwargs: Any) -> httpx.Response:
        """One request, retried on 5xx, 429 and connection errors as the clients do; the last answer."""
        for attempt in range(retries + 1):
            try:
                response = self.http.request(method, url, **kwargs)
            except httpx.TransportError:
                if attempt == retries:
                    raise
                time.sleep(0.05 * 2**attempt)
                continue
            self.statuses[response.status_code] += 1
            if response.status_code >= 500:
                self.bodies_5xx.append(f"{method} {url} {response.status_code} {response.text[:300]}")
            if response.status_code < 500 and response.status_code != 429:
                return response
            if attempt < retries:
                time.sleep(float(response.headers.get("Retry-After") or 0.05 * 2**attempt) / 10)
        return response

    def api(self, method: str, path: str, body: Any = None, expect: int | None = 200) -> httpx.Response:
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs = {"json": body, "headers": {"Content-Type": JSONAPI}}
        response = self.call(method, path, **kwargs)
        if expect is not None:
            assert response.status_code == expect, f"{method} {path}: {response.status_code} {response.text}"
        return response

    def create_workspace(self, name: str) -> str:
        body = {"data": {"type": "workspaces", "attributes": {"name": name, "execution-mode": "local"}}}
        return str(self.api("POST", f"/api/v2/organizations/{self.org}/workspaces", body, 201).json()["data"]["id"])

    # Terraform's http backend ------------------------------------------------------------
    def http_write(self, workspace: str, serial: int, lineage: str) -> bytes | None:
        """lock, POST the state, unlock (each retried as terraform does); the state when its POST was answered
        200, else None. A lock answered 423 with our own ID is ours (its first answer was lost)."""
        url = f"/state/v1/{self.org}/{workspace}"
        lock_id = str(uuid.uuid4())
        info = {"ID": lock_id, "Operation": "OperationTypeApply", "Who": "proof", "Version": "1.0.3", "Path": ""}
        response = self.call("POST", url + "/lock", content=json.dumps(info))
        held = response.status_code == 200 or (response.status_code == 423 and response.json().get("ID") == lock_id)
        if not held:
            return None
        state = state_doc(serial, lineage)
        md5 = base64.b64encode(hashlib.md5(state).digest()).decode()  # noqa: S324
        written = self.call("POST", url, params={"ID": lock_id}, content=state, headers={"Content-MD5": md5})
        unlocked = self.call("DELETE", url + "/lock", content=json.dumps(info))
        self.lock_left = unlocked.status_code != 200
        return state if written.status_code == 200 else None

    # go-tfe: lock, create a state version, unlock ---------------------------------------
    def tfe_write(self, workspace_id: str, serial: int, lineage: str) -> bytes | None:
        locked = self.call(
            "POST",
            f"/api/v2/workspaces/{workspace_id}/actions/lock",
            json={"reason": "proof"},
            headers={"Content-Type": JSONAPI},
        )
        if locked.status_code not in (200, 409):  # 409: held already (ours, its first answer lost, or not)
            return None
        state = state_doc(serial, lineage)
        attributes = {
            "serial": serial,
            "md5": md5_hex(state),
            "lineage": lineage,
            "state": base64.b64encode(state).decode(),
        }
        created = self.call(
            "POST",
            f"/api/v2/workspaces/{workspace_id}/state-versions",
            json={"data": {"type": "state-versions", "attributes": attributes}},
            headers={"Content-Type": JSONAPI},
        )
        unlocked = self.call(
            "POST", f"/api/v2/workspaces/{workspace_id}/actions/unlock", json={}, headers={"Content-Type": JSONAPI}
        )
        self.lock_left = unlocked.status_code != 200
        return state if created.status_code == 201 else None

    def force_unlock(self, workspace_id: str) -> None:
        self.call(
            "POST",
            f"/api/v2/workspaces/{workspace_id}/actions/force-unlock",
            json={},
            headers={"Content-Type": JSONAPI},
        )

    # checks --------------------------------------------------------------------------------
    def versions(self, workspace_id: str) -> list[dict[str, Any]]:
        path = f"/api/v2/workspaces/{workspace_id}/state-versions?page[size]=100"
        return list(self.api("GET", path).json()["data"])

    def download(self, url: str) -> httpx.Response:
        """A state download URL as go-tfe fetches it: with the token on the API's host, bare on S3's."""
        assert self.stack.info is not None
        if url.startswith(self.stack.info.url):
            return self.http.get(url, headers={"Accept": "*/*"}, follow_redirects=True)
        return self.bare.get(url)


def check_states(client: Client, workspace_id: str, acknowledged: dict[int, bytes]) -> dict[str, int]:
    """Every rule of a storage scenario's end (module docstring); returns what was checked."""
    listed = client.versions(workspace_id)
    by_serial = {int(v["attributes"]["serial"]): v for v in listed}
    for serial, state in acknowledged.items():
        assert serial in by_serial, f"the acknowledged state serial {serial} is not listed"
        assert by_serial[serial]["attributes"]["md5"] == md5_hex(state), f"serial {serial}: another md5 is listed"
    for version in listed:
        attributes = version["attributes"]
        assert attributes["status"] == "finalized", f"{version['id']} is {attributes['status']}"
        body = client.download(attributes["hosted-state-download-url"])
        assert body.status_code == 200, f"{version['id']}: its state download answers {body.status_code}"
        assert md5_hex(body.content) == attributes["md5"], f"{version['id']}: its bytes differ from its md5"
    if acknowledged:
        current = client.api("GET", f"/api/v2/workspaces/{workspace_id}/current-state-version").json()["data"]
        assert int(current["attributes"]["serial"]) == max(acknowledged), "the current version is not the last write"
    workspace = client.api("GET", f"/api/v2/workspaces/{workspace_id}").json()["data"]
    assert workspace["attributes"]["locked"] is False, "the workspace is still locked"
    assert client.statuses[500] == 0, "a 500 was answered:\n" + "\n".join(client.bodies_5xx[:5])
    return {"listed": len(listed), "acknowledged": len(acknowledged)}
