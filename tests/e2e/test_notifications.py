"""Notifications over real remote runs (Terraform 1.0.3, the `remote` backend, runner processes on the embedded
server) to a real HTTP receiver on loopback (the run stack allows 127.0.0.0/8): every request carries TFC's
signature of its body, the run's triggers arrive from run:created to run:completed while another receiver of
the workspace never answers (the run does not wait for it), and a receiver failing twice gets the notification
on the third attempt."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from e2e_runs import RUN_TIMEOUT_S, remote_dir, remote_workspace, runs, wait_for

pytestmark = pytest.mark.e2e

TOKEN = "receiver-shared-secret"
A_ONLY = 'resource "null_resource" "a" {}\n'


@dataclass
class Receiver:
    url: str
    answer: Callable[[int], int]  # status for the n-th request (0-based); 0: never answer until released
    requests: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def notifications(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.requests]


@pytest.fixture
def receiver() -> Iterator[Callable[[Callable[[int], int]], Receiver]]:
    servers: list[tuple[ThreadingHTTPServer, threading.Thread, Receiver]] = []

    def start(answer: Callable[[int], int]) -> Receiver:
        made: list[Receiver] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                got = made[0]
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                got.requests.append((dict(self.headers), body))
                status = got.answer(len(got.requests) - 1)
                if status == 0:
                    got.release.wait(30)
                    return
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        made.append(Receiver(f"http://127.0.0.1:{server.server_address[1]}/hook", answer))
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        servers.append((server, thread, made[0]))
        return made[0]

    yield start
    for server, thread, got in servers:
        got.release.set()
        server.shutdown()
        server.server_close()
        thread.join(10)


def _configure(api: Any, workspace_id: str, url: str, triggers: list[str]) -> dict[str, Any]:
    attributes = {"name": "hook", "destination-type": "generic", "enabled": True, "url": url, "token": TOKEN,
                  "triggers": triggers}  # fmt: skip
    body = {"data": {"type": "notification-configurations", "attributes": attributes}}
    data: dict[str, Any] = api.request(
        "POST", f"/api/v2/workspaces/{workspace_id}/notification-configurations", body, expect=201
    ).json()["data"]
    return data


def _signed(headers: dict[str, str], body: bytes) -> bool:
    expected = hmac.new(TOKEN.encode(), body, hashlib.sha512).hexdigest()
    return hmac.compare_digest(headers.get("X-TFE-Notification-Signature", ""), expected)


def test_a_remote_apply_notifies_its_triggers_signed_and_a_hanging_receiver_holds_nothing(
    run_stack, run_api, run_terraform, unique, receiver
):
    hook = receiver(lambda n: 200)
    hanging = receiver(lambda n: 200 if n == 0 else 0)  # answers its verification, then never again
    name = unique("notify")
    ws_id = remote_workspace(run_api, name)
    everything = ["run:created", "run:planning", "run:needs_attention", "run:applying", "run:completed"]
    _configure(run_api, ws_id, hanging.url, everything)
    nc = _configure(run_api, ws_id, hook.url, everything)
    [verification] = hook.notifications()  # enabling it sent one, answered before the API did
    assert verification["notifications"][0]["trigger"] == "verification"
    assert nc["attributes"]["delivery-responses"][0]["code"] == 200
    tf = remote_dir(run_stack, run_terraform, name, A_ONLY)

    tf.apply(timeout=RUN_TIMEOUT_S)

    [only] = runs(run_api, ws_id)
    assert only["attributes"]["status"] == "applied"  # while a receiver of this workspace hangs
    wait_for(lambda: len(hanging.requests) >= 2, what="a notification to reach the hanging receiver")
    about_run = lambda: [n for n in hook.notifications() if n["run_id"] == only["id"]]  # noqa: E731
    # one each, in any order of arrival (deliveries are sent concurrently, as SQS delivers them)
    wait_for(lambda: len(about_run()) >= len(everything), what="a notification for each trigger")
    assert all(_signed(headers, body) for headers, body in hook.requests)
    by_trigger = {n["notifications"][0]["trigger"]: n for n in about_run()}
    assert sorted(by_trigger) == sorted(everything) and len(about_run()) == len(everything)
    created, completed = by_trigger["run:created"], by_trigger["run:completed"]
    assert created["notifications"][0]["run_status"] == "pending"
    assert created["notifications"][0]["run_updated_at"] <= completed["notifications"][0]["run_updated_at"]
    assert completed["notifications"][0]["run_status"] == "applied" and completed["workspace_name"] == name
    assert completed["notification_configuration_id"] == nc["id"] and completed["payload_version"] == 1


def test_a_receiver_failing_twice_gets_the_third_attempt(run_stack, run_api, run_terraform, unique, receiver):
    hook = receiver(lambda n: 500 if n in (1, 2) else 200)  # the verification passes, then two failures
    name = unique("retry")
    ws_id = remote_workspace(run_api, name)
    nc = _configure(run_api, ws_id, hook.url, ["run:created"])
    tf = remote_dir(run_stack, run_terraform, name, A_ONLY)

    tf.run("plan", "-no-color", timeout=RUN_TIMEOUT_S)

    wait_for(lambda: len(hook.requests) >= 4, timeout=60, what="three attempts")
    attempts = hook.requests[1:]
    assert len({body for _, body in attempts}) == 1 and all(_signed(h, b) for h, b in attempts)

    def kept() -> list[dict[str, Any]] | None:
        path = f"/api/v2/notification-configurations/{nc['id']}"
        found = run_api.request("GET", path).json()["data"]["attributes"]["delivery-responses"]
        return found if len(found) >= 4 else None

    responses = wait_for(kept, what="the attempts to be recorded")
    assert [(r["code"], r["successful"]) for r in responses[:3]] == [(200, True), (500, False), (500, False)]
