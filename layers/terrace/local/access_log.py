"""The embedded server's access log (uvicorn's `uvicorn.access`) prints no secret a URL carries: never a query
string (blob URLs' `signature=`, OAuth codes, whatever a client appends) and never the signature of a log-read URL,
which is in its path (`/api/v2/logs/<phase>/<expires>/<signature>`: go-tfe replaces a log URL's query)."""

from __future__ import annotations

import logging
import re

LOG_READ_PATH = re.compile(r"^(/api/v2/logs/[^/]*/[^/]*/)[^/?]*")
REDACTED = "[redacted]"


def redact_path(full_path: str) -> str:
    """`full_path` (path and query, as uvicorn prints it) without its query string or a log-read signature."""
    path, query_mark, _ = full_path.partition("?")
    path = LOG_READ_PATH.sub(lambda m: m.group(1) + REDACTED, path)
    return path + (f"?{REDACTED}" if query_mark else "")


class RedactedAccessLog(logging.Filter):
    """uvicorn.access records: `args` are (client, method, path with query, HTTP version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact_path(args[2]), *args[3:])
        return True


_FILTER = RedactedAccessLog()


def install() -> None:
    """On the `uvicorn.access` logger (once, whatever the number of servers started in the process)."""
    logging.getLogger("uvicorn.access").addFilter(_FILTER)
