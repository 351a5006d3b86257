"""State clients for the kill proof: each writes one workspace's state in a loop (lock, write, unlock) and
records what the server acknowledged (a 2xx reached it) and what was in flight when the connection died.

- `HttpBackendWriter`: terraform's http backend (`LOCK`, `POST ?ID=`, `UNLOCK` on /state/v1/<org>/<ws>).
- `ApiWriter`: the TFC API as terraform's cloud backend uses it (`actions/lock`, `POST state-versions` with the
  state inline or, every other time, created pending and uploaded to `hosted-state-upload-url`, `actions/unlock`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
from kill_server import Client


def state_bytes(serial: int, lineage: str, rng: random.Random) -> bytes:
    """A valid terraform state (format 4); one write in eight is large (a wider window to die in)."""
    size = rng.randint(200_000, 900_000) if rng.random() < 0.125 else rng.randint(200, 4000)
    state = {
        "version": 4,
        "terraform_version": "1.0.3",
        "serial": serial,
        "lineage": lineage,
        "outputs": {"padding": {"value": rng.randbytes(size // 2).hex(), "type": "string"}},
        "resources": [],
    }
    return json.dumps(state).encode()


@dataclass
class Acked:
    serial: int
    md5: str
    sv_id: str = ""


@dataclass
class Writer:
    client: Client
    workspace: str  # name
    workspace_id: str
    rng: random.Random
    lineage: str = field(default_factory=lambda: str(uuid.uuid4()))
    acked: list[Acked] = field(default_factory=list)
    next_serial: int = 1
    lock_id: str = ""
    locked: bool | None = False  # what the last acknowledged lock operation left; None: one was in flight
    in_flight: str = ""  # the operation the connection died in
    writes: int = 0
    errors: list[str] = field(default_factory=list)

    def loop(self, stop: threading.Event) -> None:
        """Lock, write, unlock until the server dies (a transport error) or `stop`."""
        try:
            while not stop.is_set():
                self.cycle()
        except (httpx.TransportError, httpx.RemoteProtocolError) as exc:
            self.errors.append(f"{self.in_flight}: {type(exc).__name__}")
        except Exception as exc:  # noqa: BLE001 - a 4xx/5xx or a broken answer is the finding: keep it for the test
            self.errors.append(f"{self.in_flight}: unexpected {exc!r}")
            self.in_flight = "failed:" + self.in_flight

    def _step(self, name: str) -> None:
        self.in_flight = name

    def cycle(self) -> None:
        raise NotImplementedError

    def recover(self) -> None:
        raise NotImplementedError


class HttpBackendWriter(Writer):
    @property
    def path(self) -> str:
        return f"/state/v1/{self.client.info.organization}/{self.workspace}"

    def _lock_info(self) -> dict[str, Any]:
        return {"ID": self.lock_id, "Operation": "OperationTypeApply", "Who": "proof@kill", "Version": "1.0.3",
                "Path": "", "Info": "", "Created": "2026-01-01T00:00:00Z"}  # fmt: skip

    def cycle(self) -> None:
        self.lock_id = str(uuid.uuid4())
        self._step("lock")
        self.locked = None
        response = self.client.request("LOCK", self.path, expect=None, json=self._lock_info())
        assert response.status_code == 200, f"LOCK: {response.status_code} {response.text}"
        self.locked = True
        serial = self.next_serial
        raw = state_bytes(serial, self.lineage, self.rng)
        md5 = hashlib.md5(raw).hexdigest()  # noqa: S324 - the http backend's own checksum
        self.next_serial += 1
        self._step(f"write serial {serial}")
        headers = {"Content-MD5": base64.b64encode(bytes.fromhex(md5)).decode(), "Content-Type": "application/json"}
        response = self.client.request(
            "POST", self.path, expect=None, params={"ID": self.lock_id}, content=raw, headers=headers
        )
        assert response.status_code == 200, f"POST: {response.status_code} {response.text}"
        self.acked.append(Acked(serial, md5))
        self.writes += 1
        self._step("unlock")
        self.locked = None
        response = self.client.request("UNLOCK", self.path, expect=None, json=self._lock_info())
        assert response.status_code == 200, f"UNLOCK: {response.status_code} {response.text}"
        self.locked = False
        self.in_flight = ""

    def recover(self) -> None:
        """What terraform does next: its unlock (200 when it still held the lock, 409 when it did not)."""
        if self.locked is not False and self.lock_id:
            response = self.client.request("UNLOCK", self.path, expect=None, json=self._lock_info())
            assert response.status_code in (200, 409), f"UNLOCK after restart: {response.status_code} {response.text}"
            self.locked = False


class ApiWriter(Writer):
    pending: tuple[str, bytes, Acked] | None = None  # an upload URL, its bytes, the version it makes
    creating: tuple[int, bytes] | None = None  # the serial and bytes being written

    def cycle(self) -> None:
        api = self.client
        self._step("lock")
        self.locked = None
        api.request("POST", f"/api/v2/workspaces/{self.workspace_id}/actions/lock", {"data": {"reason": "proof"}})
        self.locked = True
        serial = self.next_serial
        raw = state_bytes(serial, self.lineage, self.rng)
        self.next_serial += 1
        self.creating = (serial, raw)
        self._write(serial, raw)
        self.creating = None
        self._step("unlock")
        self.locked = None
        api.request("POST", f"/api/v2/workspaces/{self.workspace_id}/actions/unlock", {})
        self.locked = False
        self.in_flight = ""

    def _write(self, serial: int, raw: bytes) -> None:
        api = self.client
        md5 = hashlib.md5(raw).hexdigest()  # noqa: S324 - the API's own checksum
        inline = serial % 2 == 0
        attributes: dict[str, Any] = {"serial": serial, "md5": md5, "lineage": self.lineage}
        if inline:
            attributes["state"] = base64.b64encode(raw).decode()
        self._step(f"create serial {serial}")
        body = {"data": {"type": "state-versions", "attributes": attributes}}
        created = api.request("POST", f"/api/v2/workspaces/{self.workspace_id}/state-versions", body, expect=201)
        sv = created.json()["data"]
        if not inline:
            self._step(f"upload serial {serial}")
            self.pending = (sv["attributes"]["hosted-state-upload-url"], raw, Acked(serial, md5, sv["id"]))
            put = api.blobs.put(self.pending[0], content=raw)
            assert put.status_code in (200, 201, 204), f"PUT: {put.status_code} {put.text}"
            self.pending = None
        self.acked.append(Acked(serial, md5, sv["id"]))
        self.writes += 1

    def recover(self) -> None:
        """What terraform's cloud backend does next (its HTTP client retries a request cut off): an upload cut
        off is sent again (a 409 says it had landed); a create cut off is made again, with the same serial and
        bytes (a pending version it never heard of is replaced by the new one), and uploaded; then the unlock
        (200, or 409 when the lock was not held). A workspace whose pending version is never uploaded stays
        locked until it is (or a force-unlock): the API's rule."""
        if self.pending is not None:
            url, raw, acked = self.pending
            put = self.client.blobs.put(url, content=raw)
            assert put.status_code in (200, 201, 204, 409), f"PUT again: {put.status_code} {put.text}"
            self.acked.append(acked)
            self.pending = None
        elif self.creating is not None:
            self._write(*self.creating)
        self.creating = None
        if self.locked is not False:
            response = self.client.request(
                "POST", f"/api/v2/workspaces/{self.workspace_id}/actions/unlock", {}, expect=None
            )
            assert response.status_code in (200, 409), f"unlock after restart: {response.status_code} {response.text}"
            self.locked = False
