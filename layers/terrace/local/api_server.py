"""The local stack's HTTPS API server: its listening socket (bound first, so a busy port fails before anything else
starts), uvicorn on uvloop and httptools with TLS in-process and the API's fixed pool of worker threads
(`api_threads.py`), started on its own thread and waited for."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

from terrace.local import access_log as access_log_filter
from terrace.local import tls

if TYPE_CHECKING:
    from terrace.local.api_threads import FixedPoolServer

# How long an idle client connection stays open: longer than Go's net/http keeps one (IdleConnTimeout, 90 s), so
# terraform and go-tfe close an idle connection before the server does and a request never races the server's
# close (uvicorn's 5 s default lost requests with "server disconnected" under load: docs/reliability.md).
KEEP_ALIVE_S = 100


def start(
    app: Any, listener: socket.socket, files: tls.TlsFiles, *, access_log: bool
) -> tuple[FixedPoolServer, threading.Thread]:
    """Serve `app` on `listener`, on a thread of its own, until the server's `should_exit` (`wait_started`: until it
    accepts connections)."""
    import uvicorn

    from terrace.local.api_threads import FixedPoolServer

    config = uvicorn.Config(
        app,
        ssl_certfile=str(files.cert_chain),
        ssl_keyfile=str(files.key),
        # uvloop (~17% less CPU per small request than asyncio's loop) and httptools' C parser, both pinned
        # server dependencies (docs/performance.md, "State round trip")
        loop="uvloop",
        http="httptools",
        log_level="info" if access_log else "warning",
        access_log=access_log,
        lifespan="off",
        timeout_graceful_shutdown=2,
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    logging.getLogger("uvicorn.error").addFilter(_not_cancelled_at_shutdown)
    access_log_filter.install()  # after uvicorn configured its loggers: no query string or log-read signature
    server = FixedPoolServer(config)  # the API's worker threads: a fixed pool, never retired
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, name="terrace-api", daemon=True)
    thread.start()
    return server, thread


def wait_started(server: FixedPoolServer, thread: threading.Thread) -> None:
    deadline = time.monotonic() + 60  # generous: a loaded machine starts slowly
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the API server did not start; see the log above")
        time.sleep(0.01)


def _not_cancelled_at_shutdown(record: logging.LogRecord) -> bool:
    """A request still open when the graceful-shutdown timeout passes (a runner's long-poll) is cancelled:
    that is the stop working, not an error worth a traceback."""
    error = record.exc_info[1] if record.exc_info else None
    return not isinstance(error, asyncio.CancelledError)


def listen(port: int, host: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise RuntimeError(f"port {port} is busy; set TERRACE_PORT or pass --port") from exc
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
