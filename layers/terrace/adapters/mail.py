"""The e-mail port: send one plain-text message to a few addresses (notification e-mails). Implementations:
`ses_mail.py` (Amazon SES, on AWS), `smtp_mail.py` (an SMTP server from the settings `TERRACE_SMTP_*`, the
embedded server) and `memory_mail.py` (records, for unit tests). `tests/contract/test_mail_contract.py` is the
contract."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class MailResult:
    ok: bool
    detail: str = ""  # the server's answer (a message id), or why it was not sent


class Mail(Protocol):
    def send(self, to: Sequence[str], subject: str, text: str, timeout_s: float) -> MailResult: ...
