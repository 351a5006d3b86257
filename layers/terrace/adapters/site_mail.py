"""The e-mail port as the site admin configures it: through the SMTP server of `admin/smtp-settings` when one is
enabled (read on every message, so a change applies to the next one), else through the deployment's own
(`ses_mail.py` on AWS, `smtp_mail.py` from `TERRACE_SMTP_*` embedded). Credentials are sent only after STARTTLS."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from terrace.adapters.mail import Mail, MailResult, SmtpServer
from terrace.adapters.smtp_mail import SmtpMail


def through(server: SmtpServer) -> SmtpMail:
    login = server.auth != "none" and bool(server.username)
    return SmtpMail(
        server.host,
        server.port,
        server.sender,
        starttls=login,
        username=server.username if login else "",
        password=server.password if login else "",
    )


class SiteMail:
    def __init__(self, fallback: Mail, server: Callable[[], SmtpServer | None]) -> None:
        self._fallback, self._server = fallback, server

    def send(self, to: Sequence[str], subject: str, text: str, timeout_s: float) -> MailResult:
        server = self._server()
        if server is None:
            return self._fallback.send(to, subject, text, timeout_s)
        return through(server).send(to, subject, text, timeout_s)

    @staticmethod
    def test(server: SmtpServer, address: str) -> MailResult:
        """One message to `address` through `server` (the settings' test e-mail), before they are stored."""
        text = "This message confirms that Terrace can send e-mail through this SMTP server.\n"
        return through(server).send([address], "Terrace: SMTP settings test", text, 10.0)
