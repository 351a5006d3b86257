"""`terrace backup` and `--fresh`: a data directory's files, copied consistently or removed.

A backup copies the SQLite file with SQLite's online backup API (a consistent snapshot while the server
writes), then the blobs (written once and renamed into place, so every object the snapshot names exists
before the snapshot was taken) and the key files. The copy is a data directory: `terrace serve --data OUT`.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from terrace.adapters.fs_blob_urls import UrlSigner
from terrace.adapters.fs_blobs import FsBlobs
from terrace.bootstrap import EMBEDDED_BLOBS, EMBEDDED_DATABASE, EMBEDDED_KEY, EMBEDDED_SIGNING_KEYS
from terrace.local.embedded import ADMIN_TOKEN_FILE, SECRET_FILE

PRIVATE_FILES = (EMBEDDED_KEY, EMBEDDED_SIGNING_KEYS, SECRET_FILE, ADMIN_TOKEN_FILE)
DATA_FILES = (EMBEDDED_DATABASE, f"{EMBEDDED_DATABASE}-wal", f"{EMBEDDED_DATABASE}-shm", *PRIVATE_FILES)


class BackupError(Exception):
    """The backup cannot be made (nothing to copy, or the target is in the way)."""


def backup_data(data: Path, out: Path) -> str:
    database = data / EMBEDDED_DATABASE
    if not database.is_file():
        raise BackupError(f"{data} holds no Terrace data ({EMBEDDED_DATABASE} is missing)")
    if out.exists() and any(out.iterdir()):
        raise BackupError(f"{out} exists and is not empty")
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    out.chmod(0o700)
    target = out / EMBEDDED_DATABASE
    target.touch(mode=0o600)
    source = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    destination = sqlite3.connect(str(target))
    try:
        source.backup(destination)
    finally:
        destination.close()
        source.close()
    blobs = FsBlobs(data / EMBEDDED_BLOBS, UrlSigner("unused", "https://unused"), max_put_bytes=0)
    objects = blobs.backup(out / EMBEDDED_BLOBS)
    (out / EMBEDDED_BLOBS / "tmp").mkdir(parents=True, exist_ok=True, mode=0o700)
    for name in PRIVATE_FILES:
        if (data / name).is_file():
            shutil.copy2(data / name, out / name)
            (out / name).chmod(0o600)
    return f"backed up {data} to {out}: the database and {objects} blobs"


def remove_data(data: Path) -> None:
    """Remove what the embedded server stores in `data` (its own files only; TLS files stay)."""
    for name in DATA_FILES:
        (data / name).unlink(missing_ok=True)
    shutil.rmtree(data / EMBEDDED_BLOBS, ignore_errors=True)
