"""A notification receiver on loopback for the kill proof, a little slow on purpose: each delivery holds one of the
events worker's handlers a while, so a kill finds deliveries in flight."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    """Notification receiver on loopback, a little slow (each delivery holds an events handler a while)."""

    def __init__(self, delay_s: float) -> None:
        self.bodies: list[bytes] = []
        self.cut = 0  # requests whose body a kill cut short (the sender died mid-POST): not a delivery
        received, receiver = self.bodies, self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                if len(body) < length or not body:
                    receiver.cut += 1
                    self.close_connection = True
                    return
                received.append(body)  # as it arrives: a delivery whose answer a kill cut off was seen all the same
                threading.Event().wait(delay_s)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def triggers(self) -> dict[tuple[str, str, str], list[bytes]]:
        found: dict[tuple[str, str, str], list[bytes]] = {}
        for body in list(self.bodies):
            payload = json.loads(body)
            for notice in payload.get("notifications") or []:
                key = (str(payload.get("notification_configuration_id")), str(payload.get("run_id")))
                key += (str(notice.get("trigger")),)
                found.setdefault(key, []).append(body)
        return found

    def created(self) -> dict[str, list[bytes]]:
        """The `run:created` deliveries received so far, by run id."""
        return {key[1]: bodies for key, bodies in self.triggers().items() if key[2] == "run:created"}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
