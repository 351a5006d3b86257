"""The checks a fetched terraform or OpenTofu release passes before a job may run it: the vendor's `SHA256SUMS`
carries a detached OpenPGP signature made by a key the runner trusts (each vendor's key ships in `runner/keys/` and
vouches for its own tool only: HashiCorp's, fingerprint C874011F…72D7468F, for terraform; OpenTofu's,
E3E6E43D…E5FD9F80, for OpenTofu; TERRACE_TOOL_TRUSTED_KEYS replaces them; a key keeps every binding of its history:
Sequoia checks a signature against the binding valid when it was made, so HashiCorp's key renewed in 2026 alone
refused every release signed before), and the archive's SHA-256 is the one
those sums list for it (the sum the catalog records is informational: the signed sums decide)."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any

from terrace.domain import tool_versions

KEYS_DIR = Path(__file__).resolve().parent / "keys"
SUMS_MAX = 256 * 1024  # a SHA256SUMS file lists a few dozen archives
SIGNATURE_MAX = 64 * 1024


class ReleaseRefused(Exception):
    """The release failed a check: nothing of it is kept; the message says which (`mirror`: the one it came from)."""

    mirror: str | None = None


VENDOR_KEYS = {"terraform": "hashicorp.asc", "opentofu": "opentofu.asc"}  # the file of each tool's vendor key


def shipped_keys(tool: str | None = None) -> list[bytes]:
    """The vendor key of `tool` that ships with Terrace (every shipped key when None)."""
    names = [VENDOR_KEYS[tool]] if tool in VENDOR_KEYS else [] if tool else sorted(VENDOR_KEYS.values())
    return [(KEYS_DIR / name).read_bytes() for name in names]


def load_keys(paths: str) -> list[bytes]:
    """The armored keys of TERRACE_TOOL_TRUSTED_KEYS (files or folders of `*.asc`, comma-separated)."""
    keys: list[bytes] = []
    for part in (p.strip() for p in paths.split(",")):
        if not part:
            continue
        path = Path(part)
        files = sorted(path.glob("*.asc")) if path.is_dir() else [path]
        keys += [f.read_bytes() for f in files]
    return keys


def verify_signature(sums: bytes, signature: bytes, keys: list[bytes]) -> None:
    """ReleaseRefused unless `signature` is a valid detached signature of `sums` by one of `keys`."""
    import pysequoia  # Sequoia-PGP, imported when a release is fetched

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            detached = pysequoia.Sig.from_bytes(signature)  # what is no signature at all fails before any key
            certs = [cert for key in keys for cert in _certs(key)]
            result = pysequoia.verify(bytes=sums, store=lambda _ids: certs, signature=detached)
    except BaseException as exc:  # Sequoia's errors (a Rust panic is a BaseException)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ReleaseRefused(f"the SHA256SUMS signature is not valid for any trusted key: {reason}") from exc
    if not result.valid_sigs:
        raise ReleaseRefused("the SHA256SUMS signature is not valid for any trusted key")


@functools.lru_cache(maxsize=8)
def _certs(key: bytes) -> list[Any]:
    """The certificates of an armored key, parsed once per process (a 4096-bit key with its history: ~10 ms)."""
    import pysequoia

    return list(pysequoia.Cert.split_bytes(key))


def listed_sum(sums: bytes, archive_name: str) -> str:
    """The SHA-256 `sums` lists for `archive_name`."""
    listed = tool_versions.listed_sums(sums).get(archive_name)
    if listed is None:
        raise ReleaseRefused(f"the signed SHA256SUMS lists no {archive_name}")
    return listed
