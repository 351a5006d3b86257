"""A terraform or OpenTofu version the runner does not hold, fetched from the release mirror, checked and cached.

The mirror is in the vendor's layout (TERRACE_TOOL_MIRROR_TERRAFORM, TERRACE_TOOL_MIRROR_OPENTOFU; by default the
vendors' public release sites, an air-gapped deployment points them at its own copy):

    terraform  <base>/terraform/<v>/terraform_<v>_<os>_<arch>.zip, terraform_<v>_SHA256SUMS,
               terraform_<v>_SHA256SUMS.72D7468F.sig (or .sig)
    opentofu   <base>/v<v>/tofu_<v>_<os>_<arch>.zip, tofu_<v>_SHA256SUMS, tofu_<v>_SHA256SUMS.gpgsig

The archive's SHA-256 must be the one the signed SHA256SUMS lists (`release_check.py`), the binary is unpacked by
the bounded zip reader (`domain/bounded_zip.py`) and must report the version asked for; only then is it moved, in
one rename, to `<cache>/<binary>/<version>/<binary>` (the runner's catalog folder, `catalog.py`). A failed check
leaves nothing in the cache. Every failure is a ReleaseRefused saying in words what went wrong (a mirror that cannot
be reached, a file it does not have), with the mirror it came from: the run's error in its log. Jobs wanting the same
version fetch it once: a lock per version, in the process and across processes sharing the cache (`flock`), and
whoever gets it second finds the binary there.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from terrace.domain import tool_versions as tv
from terrace.domain.bounded_tar import ArchiveRefused
from terrace.domain.bounded_zip import extract_member
from terrace.runner import release_check
from terrace.runner.client import ApiError, Transfers
from terrace.runner.commands import detect_version
from terrace.runner.release_check import ReleaseRefused

DEFAULT_MIRRORS = {
    "terraform": "https://releases.hashicorp.com",
    "opentofu": "https://github.com/opentofu/opentofu/releases/download",
}
ARCHIVE_MAX = 256 * 1024 * 1024  # terraform's zips are ~30 MB
BINARY_MAX = 512 * 1024 * 1024  # and its binaries ~90 MB
_ARCHS = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
_SETTINGS = {"terraform": "TERRACE_TOOL_MIRROR_TERRAFORM", "opentofu": "TERRACE_TOOL_MIRROR_OPENTOFU"}
_UNREACHABLE = (  # what a connection error's text means, in words
    ("refused", "connection refused"),
    ("certificate", "its TLS certificate is not trusted"),
    ("name or service not known", "its host name does not resolve"),
    ("name resolution", "its host name does not resolve"),
    ("nodename nor servname", "its host name does not resolve"),
    ("unreachable", "the network cannot reach it"),
)


def unreachable(exc: httpx.TransportError) -> str:
    """Why a mirror could not be reached, in words."""
    if isinstance(exc, httpx.TimeoutException):
        return "it did not answer in time"
    text = str(exc)
    return next((words for key, words in _UNREACHABLE if key in text.lower()), f"{type(exc).__name__}: {text}")


def _sha256(path: Path) -> str:
    with path.open("rb") as stored:
        return hashlib.file_digest(stored, "sha256").hexdigest()


def host_arch() -> str:
    return _ARCHS.get(platform.machine().lower(), platform.machine().lower())


@dataclass(frozen=True)
class Release:
    tool: str  # "terraform" | "opentofu"
    version: str
    base: str
    os: str = "linux"
    arch: str = "amd64"

    @property
    def prefix(self) -> str:
        return tv.BINARY_NAMES[self.tool]

    @property
    def folder(self) -> str:
        base = self.base.rstrip("/")
        return f"{base}/terraform/{self.version}" if self.tool == "terraform" else f"{base}/v{self.version}"

    @property
    def archive_name(self) -> str:
        return f"{self.prefix}_{self.version}_{self.os}_{self.arch}.zip"

    @property
    def sums_name(self) -> str:
        return f"{self.prefix}_{self.version}_SHA256SUMS"

    def signature_names(self) -> list[str]:
        return [f"{self.sums_name}{suffix}" for suffix in tv.SIGNATURE_SUFFIXES[self.tool]]


class ToolFetcher:
    def __init__(
        self,
        cache_dir: Path,
        transfers: Transfers,
        mirrors: dict[str, str] | None = None,
        keys: list[bytes] | None = None,
        arch: str | None = None,
    ) -> None:
        self.cache_dir = cache_dir
        self._transfers = transfers
        self._configured = {k for k, v in (mirrors or {}).items() if v}
        self._mirrors = {**DEFAULT_MIRRORS, **{k: v for k, v in (mirrors or {}).items() if v}}
        self._keys = keys  # None: each tool's own vendor key (release_check.VENDOR_KEYS)
        self._arch = arch or host_arch()
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self.fetches = 0  # release archives downloaded from the mirror by this fetcher (what the tests count)
        self.bucket_hits = 0  # and from the deployment's bucket

    def path(self, tool: str, version: str) -> Path:
        binary = tv.BINARY_NAMES[tool]
        return self.cache_dir / binary / version / binary

    def ensure(
        self,
        tool: str,
        version: str,
        say: Callable[[str], object] = lambda _line: None,
        bucket: tuple[str | None, str | None] = (None, None),
    ) -> Path:
        """The binary of `tool` `version`, fetched and checked if the cache lacks it; ReleaseRefused says why not.
        `bucket`: presigned GET and PUT of the deployment's copy of the archive (AWS): tried before the mirror,
        filled after a fetch from it."""
        if tool not in tv.BINARY_NAMES or not tv.is_version(version):
            raise ReleaseRefused(f"{tool} {version!r} is not a release this runner can fetch")
        target = self.path(tool, version)
        if os.access(target, os.X_OK):
            return target
        with self._locked(tool, version):
            if os.access(target, os.X_OK):  # another job fetched it while this one waited
                return target
            release = Release(tool, version, self._mirrors[tool], arch=self._arch)
            say(f"Fetching {release.archive_name} (checked against the signed SHA256SUMS of {release.folder})")
            try:
                self._fetch(release, target, bucket)
            except ReleaseRefused as exc:
                exc.mirror = release.base  # where it was fetched from, for the run's error
                raise
        return target

    def _setting(self, tool: str) -> str:
        """Where the mirror of `tool` comes from, for an error that is the mirror's."""
        if tool in self._configured:
            return f"the deployment's {_SETTINGS[tool]}"
        return f"the default mirror; {_SETTINGS[tool]} names another"

    @contextmanager
    def _locked(self, tool: str, version: str) -> Iterator[None]:
        with self._locks_guard:
            lock = self._locks.setdefault((tool, version), threading.Lock())
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with lock, (self.cache_dir / f".fetch-{tool}-{version}.lock").open("a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
            yield

    def _download(self, release: Release, name: str, dest: Path, max_bytes: int, missing: str = "") -> None:
        """`name` of the release's folder on the mirror; ReleaseRefused in words when the mirror does not serve it
        (`missing`: what a 404 means)."""
        setting = self._setting(release.tool)
        try:
            self._transfers.download(f"{release.folder}/{name}", dest, max_bytes, name, follow_redirects=True)
        except ApiError as exc:
            if exc.status == 404:
                raise ReleaseRefused(f"{missing or f'the mirror has no {name}'} ({setting})") from exc
            if exc.status == 413:
                raise ReleaseRefused(f"{name}: {exc}") from exc
            raise ReleaseRefused(f"the mirror answered HTTP {exc.status} for {name} ({setting})") from exc
        except httpx.TransportError as exc:
            raise ReleaseRefused(f"{unreachable(exc)} ({setting})") from exc
        except OSError as exc:
            raise ReleaseRefused(f"{name} could not be stored: {exc}") from exc

    def _signature(self, release: Release, dest: Path) -> None:
        names = release.signature_names()
        for name in names[:-1]:
            try:
                return self._download(release, name, dest, release_check.SIGNATURE_MAX)
            except ReleaseRefused:
                pass  # the next name
        missing = f"the mirror has no signature of {release.sums_name}: no {' nor '.join(names)}"
        self._download(release, names[-1], dest, release_check.SIGNATURE_MAX, missing=missing)

    def _archive(self, release: Release, archive: Path, listed: str, bucket: tuple[str | None, str | None]) -> None:
        """The release archive whose SHA-256 is `listed`: the bucket's copy when it has that one, else the mirror's
        (then copied to the bucket, once: the PUT never replaces an object)."""
        get_url, put_url = bucket
        if get_url:
            try:
                self._transfers.download(get_url, archive, ARCHIVE_MAX, "the deployment's copy of the release")
                if _sha256(archive) == listed:
                    self.bucket_hits += 1
                    return
            except (ApiError, OSError, httpx.TransportError):
                pass  # not there yet (or unreadable): the mirror's
        self.fetches += 1
        self._download(release, release.archive_name, archive, ARCHIVE_MAX)
        actual = _sha256(archive)
        if actual != listed:
            raise ReleaseRefused(f"{release.archive_name} has SHA-256 {actual}, the signed sums list {listed}")
        if put_url:
            try:
                self._transfers.upload(put_url, archive, "the deployment's copy of the release")
            except (ApiError, OSError, httpx.TransportError):
                pass  # another runner copied it first, or the bucket refused: the next runner fetches again

    def _fetch(self, release: Release, target: Path, bucket: tuple[str | None, str | None]) -> None:
        staging = self.cache_dir / f".fetch-{release.prefix}-{release.version}-{uuid.uuid4().hex}"
        staging.mkdir(parents=True)
        try:
            archive, sums, signature = staging / "release.zip", staging / "SHA256SUMS", staging / "SHA256SUMS.sig"
            self._download(release, release.sums_name, sums, release_check.SUMS_MAX,
                           missing=f"the mirror has no {release.version}: no {release.sums_name}")  # fmt: skip
            self._signature(release, signature)
            keys = self._keys if self._keys is not None else release_check.shipped_keys(release.tool)
            release_check.verify_signature(sums.read_bytes(), signature.read_bytes(), keys)
            listed = release_check.listed_sum(sums.read_bytes(), release.archive_name)
            self._archive(release, archive, listed, bucket)
            folder = staging / release.version
            folder.mkdir()
            binary = folder / release.prefix
            try:
                with binary.open("wb") as out:
                    extract_member(archive, release.prefix, out, archive_max=ARCHIVE_MAX, member_max=BINARY_MAX)
            except ArchiveRefused as exc:
                raise ReleaseRefused(f"{release.archive_name}: {exc}") from exc
            binary.chmod(0o755)
            folder.chmod(0o755)
            reported = detect_version(str(binary))
            if reported != release.version:
                raise ReleaseRefused(f"{release.archive_name} holds a binary of version {reported or 'unknown'}")
            target.parent.parent.mkdir(parents=True, exist_ok=True)
            for part in (self.cache_dir, target.parent.parent):
                part.chmod(0o755)  # job uids run the binary
            os.rename(folder, target.parent)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
