"""Reads one archive with one of the package's readers in a process of its own, its address space capped
(`RLIMIT_AS`: what it had after its imports plus `--headroom` MiB) and its allocations traced; prints one JSON line:
the outcome (`read`, `refused` with the message, or `memory-error`) and the peak of traced memory during that read.

    python archive_probe.py module|policy|runner HEADROOM_MIB ARCHIVE...    (one line per archive)
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import tracemalloc
from collections.abc import Callable, Mapping
from pathlib import Path

from terrace.adapters.hcl_reader import ParsedHcl


def _unparsed(files: Mapping[str, str]) -> ParsedHcl:
    """The archive's bounds are measured here, not its HCL (parsed in a child of its own: `process_hcl_reader.py`)."""
    return ParsedHcl(errors=dict.fromkeys(files, "not parsed by the probe"))


class _NoHcl:
    parse = staticmethod(_unparsed)


def _reader(kind: str) -> Callable[[Path], object]:
    if kind == "module":
        from terrace.services.registry.module_archive import read_module

        return lambda archive: read_module(archive.read_bytes(), _NoHcl())
    if kind == "policy":
        from terrace.services.policies.bundles import read_tarball

        return lambda archive: read_tarball(archive.read_bytes(), _NoHcl())
    from terrace.runner.safe_tar import extract

    return lambda archive: extract(archive, Path(tempfile.mkdtemp(prefix="probe-")) / "config")


def _address_space() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")


def main(kind: str, headroom_mib: int, archives: list[str]) -> None:
    from terrace.domain.errors import Invalid
    from terrace.runner.safe_tar import UnsafeArchive

    read = _reader(kind)
    limit = _address_space() + headroom_mib * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    tracemalloc.start()
    for archive in archives:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        outcome: dict[str, object] = {"outcome": "read"}
        try:
            read(Path(archive))
        except (Invalid, UnsafeArchive) as exc:
            outcome = {"outcome": "refused", "message": str(exc)}
        except MemoryError:
            outcome = {"outcome": "memory-error"}
        outcome["peak"] = tracemalloc.get_traced_memory()[1] - before
        print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
