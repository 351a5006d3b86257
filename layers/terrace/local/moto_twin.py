"""The local AWS twin: moto's threaded server, as `terrace dev --moto`, the proof suite, the tests and the benchmarks
start it (`running`, or `moto_server` for a server started and stopped by hand; never moto's bare server).

Two WSGI middlewares stand in front of moto:
- `PresignedUrlCheck` (`presigned_check.py`) checks presigned URLs' SigV4 signature and expiry as S3 does;
- `SerializedDynamo` runs one DynamoDB request at a time. moto's in-memory DynamoDB backend is not thread-safe: a
  `TransactWriteItems` deep-copies the tables it touches (to roll them back when it is cancelled) while other
  request threads write them, and fails with "dictionary changed size during iteration" (a 500); a cancelled
  transaction's roll-back would also undo the writes other threads made meanwhile. DynamoDB itself serializes
  conflicting writes (and cancels a transaction that meets another with `TransactionConflict`); one lock around
  moto's DynamoDB dispatch gives the same all-or-nothing writes. Other services (S3, SQS, ...) run concurrently.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from terrace.local.presigned_check import PresignedUrlCheck, WSGIApp

DYNAMO_TARGET = "DynamoDB_"  # X-Amz-Target of every DynamoDB request: DynamoDB_20120810.<Action>


class SerializedDynamo:
    def __init__(self, app: WSGIApp) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith(DYNAMO_TARGET):
            return self._app(environ, start_response)
        with self._lock:
            answer = self._app(environ, start_response)
            try:
                return list(answer)  # the body is produced under the lock too
            finally:
                close = getattr(answer, "close", None)
                if close is not None:
                    close()


def moto_server(ip_address: str, port: int) -> Any:
    """moto's threaded server with both middlewares in front (moto's own `_server_entry`, wrapped)."""
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    class CheckedMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:
            app = SerializedDynamo(PresignedUrlCheck(DomainDispatcherApplication(create_backend_app)))
            self._server = make_server(self._ip_address, self._port, app, True, request_handler=MotoRequestHandler)
            self._server_ready_event.set()
            self._server.serve_forever(poll_interval=0.05)  # stop() waits for a poll: 0.5 s by default

    return CheckedMotoServer(ip_address=ip_address, port=port, verbose=False)


@contextlib.contextmanager
def running(ip_address: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """The twin serving on `ip_address:port` (0: a free port) for the block; yields its endpoint URL."""
    server = moto_server(ip_address, port)
    server.start()
    host, bound = server.get_host_and_port()
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.stop()
