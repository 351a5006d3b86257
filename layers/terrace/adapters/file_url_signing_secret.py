"""The embedded server's URL-signing secret (blob URLs, log URLs, web sessions): `url-signing.secret` in its data
folder, mode 0600, made by the server itself; never read from or put into an environment variable, so no process
the server starts inherits it.

The file names its format. Format 2 is this one; a file of the older format (a bare secret, which the server
could be given as `TERRACE_URL_SIGNING_SECRET` and kept in its own environment, where a policy could read it) is
replaced once by a new random secret: signed URLs made before (5 minutes at most) and web sessions then end.
A lock file serializes two processes opening the same folder (a server and an admin command), so both read the
secret one of them made.
"""

from __future__ import annotations

import fcntl
import logging
import os
import secrets
from pathlib import Path

log = logging.getLogger("terrace.adapters.url_signing_secret")
SECRET_FILE = "url-signing.secret"
FORMAT = "terrace-url-signing-secret 2"


def load(data_dir: Path) -> str:
    """The secret of `data_dir`, made (or rotated from an older format) when needed."""
    path = data_dir / SECRET_FILE
    with open(data_dir / f".{SECRET_FILE}.lock", "a") as lock:
        os.chmod(lock.name, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _read(path)
        lines = found.splitlines() if found is not None else []
        if len(lines) == 2 and lines[0] == FORMAT and lines[1].strip():
            return lines[1].strip()
        secret = secrets.token_urlsafe(48)
        _write(path, f"{FORMAT}\n{secret}\n")
        if found is not None and found.strip():
            log.warning("the URL-signing secret in %s was of an older format and was rotated", path)
        return secret


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def _write(path: Path, text: str) -> None:
    """In place at once (a temporary file, 0600 from the start, fsynced, renamed over it)."""
    temporary = path.with_name(f".{path.name}.new")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
