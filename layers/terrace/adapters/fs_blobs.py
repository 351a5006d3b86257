"""Filesystem implementation of the blob store, with presigned-style URLs that Terrace itself serves.

Objects live under `<root>/data/<key>`; a sidecar under `<root>/meta/<key>` keeps the MD5 (the ETag the
services compare with a client's md5) and the size and mtime it was computed for, so `head` never reads
the body unless the sidecar is missing or stale. Every write goes to a temporary file in `<root>/tmp`,
is fsynced and renamed into place: a reader sees the old object or the new one, never half of one. A temporary
file is locked (`flock`) by the process writing it until it is in place, so what a killed process left there
(nothing holds its lock) is removed the next time the store is opened (`sweep_abandoned`).

`presign_put`/`presign_get` return `<public url>/blobs/<key>?method=…&expires=…&max=…&signature=…`, signed by
`fs_blob_urls.py`. `web/blob_urls.py` serves them (PUT streamed to disk, refused past `max`; GET streamed from
disk once its bytes still hash to the sidecar's MD5, `require_intact`), the way clients use S3's. A PUT
through a URL is single-use: it creates its object or is refused (409) when the object exists (`os.link` of
the finished temporary file, which never replaces a target), so a replayed upload URL can never replace what
was uploaded, finalized and recorded.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from terrace.adapters.blobs import BlobInfo
from terrace.adapters.fs_blob_urls import BlobUrlRefused, UrlSigner

CHUNK = 1024 * 1024


def check_key(key: str) -> str:
    parts = key.split("/")
    if not key or key.startswith("/") or "\x00" in key or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a blob key: {key!r}")
    return key


class FsBlobs:
    def __init__(self, root: Path | str, signer: UrlSigner, max_put_bytes: int) -> None:
        self.root = Path(root)
        self.signer = signer
        self.max_put_bytes = max_put_bytes
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        for sub in ("data", "meta", "tmp"):
            (self.root / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
        self.sweep_abandoned()

    def sweep_abandoned(self) -> list[str]:
        """Remove the temporary files no live writer holds (a process killed mid-write left them); returns
        their names. A file being written is locked by its writer and kept."""
        removed = []
        for entry in os.scandir(self.root / "tmp"):
            try:
                fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                continue  # gone meanwhile (installed), or not a file of ours
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue  # a live writer's
            try:
                os.unlink(entry.path)
                removed.append(entry.name)
            except FileNotFoundError:
                pass
            finally:
                os.close(fd)
        return removed

    def _locked_temp(self, prefix: str) -> tuple[int, Path]:
        """A new temporary file, locked for as long as its descriptor is open."""
        fd, name = tempfile.mkstemp(dir=self.root / "tmp", prefix=prefix)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd, Path(name)

    # paths ---------------------------------------------------------------------------------
    def path_of(self, key: str) -> Path:
        return self.root / "data" / check_key(key)

    def _meta_path(self, key: str) -> Path:
        return self.root / "meta" / check_key(key)

    # writes --------------------------------------------------------------------------------
    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        self.write_stream(key, [data])

    def write_stream(self, key: str, chunks: Iterable[bytes], max_bytes: int | None = None) -> BlobInfo:
        """Write an object from `chunks` (atomically); BlobUrlRefused(413) past `max_bytes`, nothing written."""
        writer = self.open_writer(key, max_bytes)
        try:
            for chunk in chunks:
                writer.write(chunk)
        except BaseException:
            writer.abort()
            raise
        return writer.commit()

    def open_writer(self, key: str, max_bytes: int | None = None, exclusive: bool = False) -> BlobWriter:
        """`exclusive` (uploads through URLs): the commit creates the object, or is refused (409) if it exists."""
        return BlobWriter(self, check_key(key), max_bytes, exclusive)

    def refuse_existing(self, key: str) -> None:
        """BlobUrlRefused (409) when `key` exists: an upload URL is good for one upload."""
        if self.path_of(key).exists():
            raise BlobUrlRefused(409, "this upload URL has been used: the object exists and cannot be replaced")

    def _install(self, key: str, temp: Path, digest: str, size: int, exclusive: bool = False) -> BlobInfo:
        target = self.path_of(key)
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if exclusive:
            try:
                os.link(temp, target)  # never replaces: of two uploads to one key, one creates it
            except FileExistsError:
                raise BlobUrlRefused(
                    409, "this upload URL has been used: the object exists and cannot be replaced"
                ) from None
            temp.unlink()
        else:
            os.replace(temp, target)
        _fsync_dir(target.parent)
        self._write_meta(key, target, digest)
        return BlobInfo(size=size, etag=digest)

    def _write_meta(self, key: str, target: Path, digest: str) -> None:
        stat = target.stat()
        meta = self._meta_path(key)
        meta.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temp = self._locked_temp("meta-")
        with os.fdopen(fd, "w") as out:  # locked until it is in place
            json.dump({"md5": digest, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}, out)
            out.flush()
            os.replace(temp, meta)

    def delete(self, key: str) -> None:
        for path in (self.path_of(key), self._meta_path(key)):
            path.unlink(missing_ok=True)

    def copy(self, source_key: str, target_key: str, source_version: str | None = None) -> str | None:
        self.write_stream(target_key, self.iter_chunks(source_key))
        return None

    # reads ---------------------------------------------------------------------------------
    def get(self, key: str, version: str | None = None) -> bytes:
        try:
            return self.path_of(key).read_bytes()
        except FileNotFoundError:
            raise KeyError(key) from None

    def iter_chunks(self, key: str, chunk_size: int = CHUNK, version: str | None = None) -> Iterator[bytes]:
        try:
            source = self.path_of(key).open("rb")
        except FileNotFoundError:
            raise KeyError(key) from None
        with source:
            while chunk := source.read(chunk_size):
                yield chunk

    def get_range(self, key: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        try:
            with self.path_of(key).open("rb") as source:
                source.seek(start)
                return source.read(end - start)
        except FileNotFoundError:
            raise KeyError(key) from None

    def head(self, key: str) -> BlobInfo | None:
        path = self.path_of(key)
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None
        try:
            meta = json.loads(self._meta_path(key).read_text())
            if meta["size"] == stat.st_size and meta["mtime_ns"] == stat.st_mtime_ns:
                return BlobInfo(size=stat.st_size, etag=str(meta["md5"]))
        except (FileNotFoundError, ValueError, KeyError):
            pass
        digest = hashlib.md5()  # the sidecar is missing or stale (a crash between rename and sidecar)
        with path.open("rb") as source:
            while chunk := source.read(CHUNK):
                digest.update(chunk)
        self._write_meta(key, path, digest.hexdigest())
        return BlobInfo(size=stat.st_size, etag=digest.hexdigest())

    def require_intact(self, key: str) -> None:
        """BlobUrlRefused (409) when the object's bytes no longer hash to the MD5 its sidecar recorded when it was
        written (a damaged disk, a flipped bit): the blob URL server checks before it serves a byte. An object
        without a sidecar cannot be checked and passes. Reads never write: the sidecar is left as it is."""
        try:
            recorded = str(json.loads(self._meta_path(key).read_text())["md5"])
        except (FileNotFoundError, ValueError, KeyError):
            return
        digest = hashlib.md5()
        with self.path_of(key).open("rb") as source:
            while chunk := source.read(CHUNK):
                digest.update(chunk)
        if digest.hexdigest() != recorded:
            raise BlobUrlRefused(409, "the stored object does not match the MD5 recorded when it was written")

    # URLs ----------------------------------------------------------------------------------
    def presign_put(self, key: str, ttl_s: int, exclusive: bool = False) -> str:  # every URL PUT is exclusive
        return self.signer.sign("PUT", check_key(key), ttl_s, self.max_put_bytes)

    def presign_get(self, key: str, ttl_s: int, version: str | None = None) -> str:
        return self.signer.sign("GET", check_key(key), ttl_s)

    def backup(self, target: Path) -> int:
        """Copy every object and sidecar to `target` (objects are immutable once renamed in); returns the count."""
        copied = 0
        for sub in ("data", "meta"):
            source_root = self.root / sub
            for dirpath, _dirs, files in os.walk(source_root):
                for name in files:
                    source = Path(dirpath) / name
                    dest = target / sub / source.relative_to(source_root)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    try:
                        shutil.copy2(source, dest)
                    except FileNotFoundError:
                        continue  # deleted meanwhile
                    copied += sub == "data"
        return copied


class BlobWriter:
    """One object being written: to a temporary file, MD5 and size counted as it goes."""

    def __init__(self, blobs: FsBlobs, key: str, max_bytes: int | None, exclusive: bool = False) -> None:
        self._blobs, self._key, self._max, self._exclusive = blobs, key, max_bytes, exclusive
        fd, self._temp = blobs._locked_temp("upload-")
        self._out = os.fdopen(fd, "wb")  # its lock is held until the object is in place
        self._md5 = hashlib.md5()
        self.size = 0

    def write(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self._max is not None and self.size > self._max:
            raise BlobUrlRefused(413, f"the object is larger than {self._max} bytes")
        self._md5.update(chunk)
        self._out.write(chunk)

    def commit(self) -> BlobInfo:
        self._out.flush()
        os.fsync(self._out.fileno())
        try:
            return self._blobs._install(self._key, self._temp, self._md5.hexdigest(), self.size, self._exclusive)
        finally:
            self._out.close()

    def abort(self) -> None:
        self._out.close()
        self._temp.unlink(missing_ok=True)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
