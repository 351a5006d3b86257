"""The e-mail port: send one plain-text message to a few addresses (notification e-mails). Implementations:
`ses_mail.py` (Amazon SES, on AWS), `smtp_mail.py` (an SMTP server from the settings `TERRACE_SMTP_*`, the
embedded server) and `memory_mail.py` (records, for unit tests). `tests/contract/test_mail_contract.py` is the
contract."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class MailResult:
    ok: bool
    detail: str = ""  # the server's answer (a message id), or why it was not sent


@dataclass(frozen=True)
class SmtpServer:
    """An SMTP server the site admin configured (`admin/smtp-settings`); the password is never shown."""

    host: str
    port: int
    sender: str
    auth: str  # none, plain or login (smtplib picks the mechanism the server offers)
    username: str = ""
    password: str = field(default="", repr=False)


class Mail(Protocol):
    def send(self, to: Sequence[str], subject: str, text: str, timeout_s: float) -> MailResult: ...
