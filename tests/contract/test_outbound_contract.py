"""The outbound port (`adapters/outbound.py: Outbound`): POST a body to a URL a user configured, under the destination
rules of `domain/destinations.py`. Implementations: `HttpxOutbound` against a real receiver on this machine (plain
HTTP and TLS), `MemoryOutbound` (records). Both deliver to an allowed destination and refuse, without sending, a
destination that is or resolves to a loopback, private or link-local address the deployment does not allow."""

from __future__ import annotations

import ipaddress
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import trustme
from terrace.adapters.httpx_outbound import HttpxOutbound
from terrace.adapters.memory_outbound import MemoryOutbound
from terrace.adapters.outbound import Outbound, OutboundResponse
from terrace.domain.destinations import Allowance

HOOK_HOST = "hooks.example.test"  # resolves to this machine only through the tests' resolver
LOOPBACK = Allowance.parse(["127.0.0.0/8"])


@dataclass
class Receiver:
    url: str  # of the receiver, by name
    received: list[dict[str, Any]] = field(default_factory=list)
    answer_status: int = 202


def _resolver(host: str, port: int) -> list[Any]:
    if host == HOOK_HOST:
        return [ipaddress.ip_address("127.0.0.1")]
    if host == "inward.example.test":
        return [ipaddress.ip_address("10.1.2.3")]
    if host == "metadata.example.test":
        return [ipaddress.ip_address("169.254.169.254")]
    return [ipaddress.ip_address(host)] if host[0].isdigit() else [ipaddress.ip_address("93.184.215.14")]


def _serve(receiver: Receiver, context: ssl.SSLContext | None) -> Iterator[ThreadingHTTPServer]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            receiver.received.append({"path": self.path, "body": body, "headers": dict(self.headers)})
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
                self.end_headers()
                return
            self.send_response(receiver.answer_status)
            self.send_header("X-Receiver", "terrace-test")
            self.end_headers()
            self.wfile.write(b"thanks")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(params=["httpx-http", "httpx-tls", "memory"])
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[Outbound, Receiver]]:
    kind = request.param
    if kind == "memory":
        receiver = Receiver(url=f"https://{HOOK_HOST}:9443")
        memory = MemoryOutbound(allowance=LOOPBACK, resolver=_resolver)

        def answer(url: str, body: bytes) -> OutboundResponse:
            sent = memory.sent[-1]
            receiver.received.append({"path": "/" + url.split("/", 3)[3], "body": body, "headers": sent.headers})
            return OutboundResponse(receiver.answer_status, "thanks", headers={"X-Receiver": ["terrace-test"]})

        memory.answer = answer
        yield memory, receiver
        return
    ca = trustme.CA()
    context = None
    if kind == "httpx-tls":
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(HOOK_HOST).configure_cert(context)
    receiver = Receiver(url="")
    for server in _serve(receiver, context):
        scheme = "https" if context else "http"
        receiver.url = f"{scheme}://{HOOK_HOST}:{server.server_address[1]}"
        client_context = ssl.create_default_context()
        ca.configure_trust(client_context)
        yield HttpxOutbound(LOOPBACK, resolver=_resolver, verify=client_context), receiver


def test_delivers_the_body_and_headers_and_returns_the_answer(pair: tuple[Outbound, Receiver]) -> None:
    outbound, receiver = pair
    answer = outbound.post(receiver.url + "/hook", b'{"a":1}', {"X-Signature": "abc"}, timeout_s=10)
    assert answer.status == 202 and answer.ok and answer.body == "thanks" and answer.error is None
    assert {k.lower(): v for k, v in answer.headers.items()}["x-receiver"] == ["terrace-test"]  # kept with it
    [got] = receiver.received
    assert got["path"] == "/hook" and got["body"] == b'{"a":1}'
    headers = {k.lower(): v for k, v in got["headers"].items()}
    assert headers["x-signature"] == "abc"


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://metadata.example.test/",
        "http://inward.example.test/hook",
        "http://10.0.0.8/hook",
        "http://[::1]/hook",
        "http://[::ffff:169.254.169.254]/",
        "http://localhost/hook",
        "file:///etc/passwd",
        "gopher://93.184.215.14/",
        "http://user:secret@93.184.215.14/",
    ],
)
def test_refuses_inward_destinations_without_sending(pair: tuple[Outbound, Receiver], url: str) -> None:
    outbound, receiver = pair
    answer = outbound.post(url, b"{}", {}, timeout_s=5)
    assert answer.status is None and not answer.ok
    assert answer.error is not None and answer.error.startswith("blocked")
    assert receiver.received == []


def test_an_allowed_network_is_reached(pair: tuple[Outbound, Receiver]) -> None:
    outbound, receiver = pair  # the receiver's name resolves to 127.0.0.1, which LOOPBACK allows
    assert outbound.post(receiver.url + "/ok", b"x", {}, timeout_s=10).ok


def test_a_redirect_is_the_answer_never_followed() -> None:
    receiver = Receiver(url="")
    for server in _serve(receiver, None):
        outbound = HttpxOutbound(LOOPBACK, resolver=_resolver)
        answer = outbound.post(f"http://{HOOK_HOST}:{server.server_address[1]}/redirect", b"{}", {}, timeout_s=10)
        assert answer.status == 302 and not answer.ok
        assert [r["path"] for r in receiver.received] == ["/redirect"]


def test_a_request_httpx_cannot_send_is_an_error_answer_never_an_exception() -> None:
    receiver = Receiver(url="")
    for server in _serve(receiver, None):
        outbound = HttpxOutbound(LOOPBACK, resolver=_resolver)
        base = f"http://{HOOK_HOST}:{server.server_address[1]}"
        for url, headers in ((f"{base}/\x00", {}), (f"{base}/ok", {"X-Signature": "\u20ac"})):
            answer = outbound.post(url, b"{}", headers, timeout_s=10)
            assert answer.status is None and (answer.error or "").startswith("invalid request"), answer
        assert receiver.received == []


def test_a_receiver_that_does_not_answer_in_time_is_a_timeout() -> None:
    listener = __import__("socket").socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts the connection into its backlog, never answers
    try:
        outbound = HttpxOutbound(LOOPBACK, resolver=_resolver)
        answer = outbound.post(f"http://{HOOK_HOST}:{listener.getsockname()[1]}/", b"{}", {}, timeout_s=0.5)
        assert answer.status is None and answer.error == "timeout"
    finally:
        listener.close()


def test_a_certificate_for_another_name_is_refused() -> None:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("someone-else.example.test").configure_cert(context)
    receiver = Receiver(url="")
    for server in _serve(receiver, context):
        client_context = ssl.create_default_context()
        ca.configure_trust(client_context)
        outbound = HttpxOutbound(LOOPBACK, resolver=_resolver, verify=client_context)
        answer = outbound.post(f"https://{HOOK_HOST}:{server.server_address[1]}/", b"{}", {}, timeout_s=10)
        assert answer.status is None and answer.error is not None and answer.error.startswith("connection")
