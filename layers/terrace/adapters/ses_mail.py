"""The e-mail port over Amazon SES (AWS; moto in tests): `SendEmail` from the verified sender `TERRACE_MAIL_FROM`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from terrace.adapters.mail import MailResult


class SesMail:
    def __init__(self, client: Any, sender: str) -> None:
        self._client, self._sender = client, sender

    def send(self, to: Sequence[str], subject: str, text: str, timeout_s: float) -> MailResult:
        if not to:
            return MailResult(False, "no recipients")
        try:
            answer = self._client.send_email(
                Source=self._sender,
                Destination={"ToAddresses": list(to)},
                Message={
                    "Subject": {"Data": subject, "Charset": "UTF-8"},
                    "Body": {"Text": {"Data": text, "Charset": "UTF-8"}},
                },
            )
        except (ClientError, BotoCoreError) as exc:
            return MailResult(False, f"ses: {exc}"[:512])
        return MailResult(True, str(answer.get("MessageId", "")))
