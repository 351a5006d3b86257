"""Signing keys in one file of the embedded server's data folder, beside `master.key`: mode 0600, replaced
atomically (a new file written, fsynced and renamed over it) under an exclusive `flock` of a lock file, so the
server and `terrace workload-identity rotate` never lose each other's change."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from terrace.adapters.signing_keys import SigningKey


class FileSigningKeys:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def load(self) -> list[SigningKey]:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return []
        return [SigningKey.from_json(json.dumps(item)) for item in json.loads(text or "[]")]

    def put(self, key: SigningKey) -> None:
        self._change(lambda keys: [*(k for k in keys if k.kid != key.kid), key])

    def delete(self, kid: str) -> None:
        self._change(lambda keys: [k for k in keys if k.kid != kid])

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _change(self, change: Callable[[list[SigningKey]], list[SigningKey]]) -> None:
        with self._locked():
            keys = change(self.load())
            text = json.dumps([json.loads(k.to_json()) for k in keys])
            temporary = self.path.with_name(self.path.name + ".new")
            temporary.unlink(missing_ok=True)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, text.encode())
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, self.path)
