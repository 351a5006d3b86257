"""The HCL reader (`hcl_reader.py`) on python-hcl2 in a child process (`hcl_child.py`) started by
`tenant_process.py`: one child per upload, its CPU time, resident memory and wall-clock time bounded, and at most
`bytes_max` bytes of HCL given to it; a file past that budget, or not parsed when a limit stopped the child, has
an error instead of a document."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from terrace.adapters import tenant_process
from terrace.adapters.hcl_reader import ParsedHcl

CHILD_MODULE = "terrace.adapters.hcl_child"
STOPPED = {
    "cpu": "reading the upload's HCL used more CPU time than allowed",
    "time": "reading the upload's HCL took longer than allowed",
    "memory": "reading the upload's HCL used more memory than allowed",
}


def within_budget(files: Mapping[str, str], bytes_max: int) -> tuple[dict[str, str], dict[str, str]]:
    """The files given to a parser (in their order, up to `bytes_max` bytes of HCL in all) and an error for each
    one past that budget: checked before the text goes anywhere (a child, the policy function)."""
    given: dict[str, str] = {}
    errors: dict[str, str] = {}
    spent = 0
    for name, text in files.items():
        size = len(text.encode())
        if spent + size > bytes_max:
            errors[name] = f"not read: the upload's HCL is read up to {bytes_max} bytes"
            continue
        spent += size
        given[name] = text
    return given, errors


def unread(given: Mapping[str, str], documents: Mapping[str, Any], errors: dict[str, str], why: str | None) -> None:
    """An error for each given file that has neither a document nor an error (`why` the parse stopped)."""
    for name in given:
        if name not in documents and name not in errors:
            errors[name] = f"not read: {why or 'no answer'}"


class ProcessHclReader:
    def __init__(
        self, *, bytes_max: int = 512 * 1024, cpu_s: int = 6, timeout_s: float = 12.0, memory_mb: int = 512
    ) -> None:
        """The defaults: python-hcl2 reads about 50 KiB of `variable` blocks a second of CPU, and a large real
        module's root (variables, outputs, resources) holds 50 to 150 KiB."""
        self.bytes_max = bytes_max
        self.limits = tenant_process.Limits(cpu_s=cpu_s, memory_bytes=memory_mb * 1024 * 1024, timeout_s=timeout_s)

    def parse(self, files: Mapping[str, str]) -> ParsedHcl:
        given, errors = within_budget(files, self.bytes_max)
        if not given:
            return ParsedHcl(errors=errors)
        outcome = tenant_process.run_module(CHILD_MODULE, json.dumps({"files": given}).encode(), self.limits)
        documents: dict[str, dict] = {}
        for raw in outcome.stdout.splitlines():
            try:
                line = json.loads(raw)
            except ValueError:  # the last line of a child stopped mid-write
                continue
            if "document" in line:
                documents[line["name"]] = line["document"]
            else:
                errors[line["name"]] = str(line.get("error", "not read"))
        stopped = STOPPED.get(outcome.stopped or "") or (
            None if outcome.returncode == 0 else f"reading the upload's HCL failed (exit {outcome.returncode})"
        )
        unread(given, documents, errors, stopped)
        return ParsedHcl(documents=documents, errors=errors, stopped=stopped)
