"""A tiny SMTP receiver on loopback (the standard library's socketserver; aiosmtpd is not a dependency): enough of
RFC 5321 for smtplib's EHLO, MAIL, RCPT, DATA and QUIT. Each message lands in `messages` as (recipients, data)."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Inbox:
    port: int
    messages: list[tuple[list[str], bytes]] = field(default_factory=list)


class _Handler(socketserver.StreamRequestHandler):
    inbox: Inbox

    def _say(self, line: str) -> None:
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self) -> None:
        self._say("220 receiver ready")
        recipients: list[str] = []
        while True:
            line = self.rfile.readline(4096)
            if not line:
                return
            verb = line.decode(errors="replace").strip().upper()
            if verb.startswith(("EHLO", "HELO")):
                self._say("250 receiver")
            elif verb.startswith("MAIL FROM"):
                recipients = []
                self._say("250 ok")
            elif verb.startswith("RCPT TO"):
                recipients.append(line.decode().split(":", 1)[1].strip().strip("<>"))
                self._say("250 ok")
            elif verb == "DATA":
                self._say("354 go on")
                data = b""
                while (chunk := self.rfile.readline(65536)) not in (b".\r\n", b""):
                    data += chunk
                self.inbox.messages.append((recipients, data))
                self._say("250 queued")
            elif verb == "QUIT":
                self._say("221 bye")
                return
            else:
                self._say("250 ok")


@contextmanager
def smtp_receiver() -> Iterator[Inbox]:
    handler = type("Handler", (_Handler,), {})
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    inbox = Inbox(server.server_address[1])
    handler.inbox = inbox
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield inbox
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
