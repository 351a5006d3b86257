"""The embedded server's adapters, everything in `settings.data_dir`: one SQLite file in WAL mode (the table and
the events queue), a blob folder whose presigned-style URLs the app serves itself, and the AES-GCM
envelope-encryption key of sensitive values (0600). `terrace serve`, `make dev`; `local/backup.py` copies
these files.

The adapters' modules are imported when `open_data_dir` runs (`bootstrap` re-exports the file names)."""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from terrace.config import Settings

if TYPE_CHECKING:
    from terrace.adapters.file_signing_keys import FileSigningKeys
    from terrace.adapters.fs_blobs import FsBlobs
    from terrace.adapters.local_encryptor import LocalEncryptor
    from terrace.adapters.sqlite_events import SqliteEventQueue
    from terrace.adapters.sqlite_lanes import SqliteLanes
    from terrace.adapters.sqlite_table import SqliteDatabase, SqliteTable

EMBEDDED_DATABASE = "terrace.db"  # table, events queue and lanes
EMBEDDED_BLOBS = "blobs"
EMBEDDED_KEY = "master.key"  # the envelope-encryption key of sensitive values (0600)
EMBEDDED_SIGNING_KEYS = "workload-identity.keys"  # the workload identity issuer's private keys (0600)


@dataclass
class EmbeddedAdapters:
    database: SqliteDatabase  # the container closes it (and backups read it)
    table: SqliteTable
    blobs: FsBlobs
    encryptor: LocalEncryptor
    events: SqliteEventQueue  # publishes to the events queue and consumes it
    signing_keys: FileSigningKeys
    lanes: SqliteLanes  # the dispatcher's priority lanes


def with_url_signing_secret(settings: Settings) -> Settings:
    """`settings` with the data folder's own URL-signing secret (`adapters/file_url_signing_secret.py`) when they
    name none: an admin command (`terrace user create`, ...) reaches the server's data without it in its
    environment."""
    if settings.url_signing_secret.strip() or not settings.data_dir:
        return settings
    from terrace.adapters import file_url_signing_secret

    data = Path(settings.data_dir)
    data.mkdir(parents=True, exist_ok=True, mode=0o700)
    return settings.replace(url_signing_secret=file_url_signing_secret.load(data))


def private(data: Path) -> None:
    """No other uid (a run's job uid, a tenant child's) lists or writes the data folder, nor reads its database:
    an existing folder loses its group and other read and write bits (it keeps x: `terrace serve`'s is 0711, the
    job uids pass through to their job folders), a database a former version made 0644 becomes 0600 (its -wal
    and -shm files take the database's mode when SQLite makes them)."""
    mode = stat.S_IMODE(data.stat().st_mode)
    if mode & 0o066:
        data.chmod(mode & ~0o066)
    for name in (EMBEDDED_DATABASE, f"{EMBEDDED_DATABASE}-wal", f"{EMBEDDED_DATABASE}-shm"):
        path = data / name
        if path.is_file() and stat.S_IMODE(path.stat().st_mode) & 0o077:
            path.chmod(0o600)


def open_data_dir(settings: Settings) -> EmbeddedAdapters:
    """The adapters over `settings.data_dir` (created 0700 when missing, kept private: `private`)."""
    from terrace.adapters.definitions import EVENTS_QUEUE
    from terrace.adapters.file_signing_keys import FileSigningKeys
    from terrace.adapters.fs_blob_urls import UrlSigner
    from terrace.adapters.fs_blobs import FsBlobs
    from terrace.adapters.local_encryptor import LocalEncryptor
    from terrace.adapters.sqlite_events import SqliteEventQueue
    from terrace.adapters.sqlite_lanes import SqliteLanes
    from terrace.adapters.sqlite_table import SqliteDatabase, SqliteTable

    if not settings.data_dir:
        raise ValueError("build_embedded needs settings.data_dir")
    settings.require_url_signing_secret()  # the blob URLs are signed with it
    data = Path(settings.data_dir)
    data.mkdir(parents=True, exist_ok=True, mode=0o700)
    private(data)
    database = SqliteDatabase(data / EMBEDDED_DATABASE)
    database.fill()  # the server's open files are the same from its start
    events = SqliteEventQueue(database, visibility_s=EVENTS_QUEUE.visibility_timeout_s)
    signer = UrlSigner(settings.url_signing_secret, settings.public_url)
    max_put = max(settings.max_config_bytes, settings.max_inline_state_bytes)
    return EmbeddedAdapters(
        database=database,
        table=SqliteTable(database),
        blobs=FsBlobs(data / EMBEDDED_BLOBS, signer, max_put_bytes=max_put),
        encryptor=LocalEncryptor(data / EMBEDDED_KEY),
        events=events,
        signing_keys=FileSigningKeys(data / EMBEDDED_SIGNING_KEYS),
        lanes=SqliteLanes(database),
    )
