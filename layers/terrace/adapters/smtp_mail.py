"""The e-mail port over SMTP (the embedded server): `TERRACE_SMTP_HOST`/`PORT`, optional `STARTTLS` and login
(`USERNAME`/`PASSWORD`), the sender `TERRACE_MAIL_FROM`. Without a host, sending fails with a clear reason."""

from __future__ import annotations

import smtplib
import ssl
from collections.abc import Sequence
from email.message import EmailMessage
from email.utils import make_msgid

from terrace.adapters.mail import MailResult


class SmtpMail:
    def __init__(
        self,
        host: str,
        port: int = 25,
        sender: str = "terrace@localhost",
        *,
        starttls: bool = False,
        username: str = "",
        password: str = "",
    ) -> None:
        self._host, self._port, self._sender = host, port, sender
        self._starttls, self._username, self._password = starttls, username, password

    def send(self, to: Sequence[str], subject: str, text: str, timeout_s: float) -> MailResult:
        if not self._host:
            return MailResult(False, "no SMTP server configured (TERRACE_SMTP_HOST)")
        if not to:
            return MailResult(False, "no recipients")
        message = EmailMessage()
        message["From"], message["To"], message["Subject"] = self._sender, ", ".join(to), subject
        message["Message-ID"] = make_msgid(domain="terrace")
        message.set_content(text)
        try:
            with smtplib.SMTP(self._host, self._port, timeout=timeout_s) as smtp:
                if self._starttls:
                    smtp.starttls(context=ssl.create_default_context())
                if self._username:
                    smtp.login(self._username, self._password)
                refused = smtp.send_message(message)
        except (OSError, smtplib.SMTPException) as exc:
            return MailResult(False, f"smtp: {exc.__class__.__name__}: {exc}"[:512])
        if refused:
            return MailResult(False, f"smtp: refused {', '.join(sorted(refused))}"[:512])
        return MailResult(True, str(message["Message-ID"]))
