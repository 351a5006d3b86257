"""What a migration did, would do (a dry run) and left for a person: printed as it goes, saved as JSON."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

# kinds a migration never moves: history, or what no API reveals
STAYS_BEHIND = [
    {"kind": "runs", "name": "*", "why": "runs, plans, applies and their logs are history and stay on the source"},
]


@dataclass
class Report:
    source: str
    target: str
    organization: str
    dry_run: bool
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    status: str = "running"
    error: str | None = None
    actions: list[dict[str, Any]] = field(default_factory=list)
    todo: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    not_moved: list[dict[str, str]] = field(default_factory=lambda: list(STAYS_BEHIND))
    out: TextIO = field(default_factory=lambda: sys.stdout, repr=False)

    def record(self, kind: str, name: str, action: str, detail: str = "") -> None:
        """One object's fate: create, update, skip (already equal) or fail."""
        self.actions.append({"kind": kind, "name": name, "action": action, **({"detail": detail} if detail else {})})
        verb = f"would {action}" if self.dry_run and action in ("create", "update") else action
        print(f"  {verb:<13} {kind:<22} {name}{f'  ({detail})' if detail else ''}", file=self.out, flush=True)

    def must(self, kind: str, name: str, what: str) -> None:
        """Something a person must still do on the target (a secret to re-enter, an invitation to send)."""
        entry = {"kind": kind, "name": name, "what": what}
        if entry not in self.todo:
            self.todo.append(entry)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        print(f"warning: {message}", file=self.out, flush=True)

    def left(self, kind: str, name: str, why: str) -> None:
        self.not_moved.append({"kind": kind, "name": name, "why": why})

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for entry in self.actions:
            found[entry["action"]] = found.get(entry["action"], 0) + 1
        return found

    def as_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "out"}
        data["counts"] = self.counts()
        return data

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.as_dict(), indent=2) + "\n")

    def summary(self) -> str:
        counts = ", ".join(f"{n} {a}" for a, n in sorted(self.counts().items())) or "nothing to do"
        lines = [f"{'plan' if self.dry_run else self.status}: {counts}"]
        if self.todo:
            lines.append("still to do on the target:")
            lines += [f"  - {t['kind']} {t['name']}: {t['what']}" for t in self.todo]
        if self.not_moved:
            lines.append("not moved:")
            lines += [f"  - {n['kind']} {n['name']}: {n['why']}" for n in self.not_moved]
        return "\n".join(lines)
