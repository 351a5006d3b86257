"""The e-mail port in memory (unit tests): records every message; `fail` makes sends fail."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from terrace.adapters.mail import MailResult


@dataclass(frozen=True)
class SentMail:
    to: tuple[str, ...]
    subject: str
    text: str


@dataclass
class MemoryMail:
    sender: str = "terrace@localhost"
    fail: str | None = None  # when set, every send fails with this reason
    sent: list[SentMail] = field(default_factory=list)

    def send(self, to: Sequence[str], subject: str, text: str, timeout_s: float) -> MailResult:
        if not to:
            return MailResult(False, "no recipients")
        if self.fail is not None:
            return MailResult(False, self.fail)
        self.sent.append(SentMail(tuple(to), subject, text))
        return MailResult(True, f"memory-{len(self.sent)}")
