"""Process facts the kill proofs check, read from `/proc`: a process's descendants, its command line, and every
process whose command line or environment names a text (a job's marker, a data directory): no orphan survives."""

from __future__ import annotations

import os


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in ("Z", "X"):
            parents[int(entry)] = int(fields[1])
    return parents


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def descendants(root: int) -> dict[int, str]:
    """Live processes below `root`: pid -> command line."""
    parents = _parents()
    found: dict[int, str] = {}
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier and pid not in found}
        found.update((pid, command_line(pid)) for pid in frontier)
    return found


def processes_mentioning(text: str) -> dict[int, str]:
    """Every live process whose command line or environment holds `text` (a job's marker, a data dir)."""
    found = {}
    needle = text.encode()
    for pid in _parents():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                env = environ.read()
        except OSError:
            env = b""
        cmd = command_line(pid)
        if text in cmd or needle in env:
            found[pid] = cmd
    return found
