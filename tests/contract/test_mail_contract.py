"""The e-mail port (`adapters/mail.py: Mail`) on memory, SMTP (against a local receiver) and SES (moto): a message
reaches every recipient with its subject and text; no recipients, an unreachable server or an unverified sender
is a failed result naming why, never an exception."""

from __future__ import annotations

import email
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import boto3
import pytest
from smtp_receiver import smtp_receiver
from terrace.adapters.mail import Mail
from terrace.adapters.memory_mail import MemoryMail
from terrace.adapters.ses_mail import SesMail
from terrace.adapters.smtp_mail import SmtpMail

KINDS = ["memory", "smtp", "ses"]
SENDER = "terrace@example.com"


@dataclass
class Case:
    mail: Mail
    delivered: Callable[[], list[tuple[list[str], str, str]]]  # (recipients, subject, text) of each message
    failing: Mail  # the same kind, unable to send


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(params=KINDS)
def case(request: pytest.FixtureRequest) -> Iterator[Case]:
    if request.param == "memory":
        memory = MemoryMail()
        yield Case(memory, lambda: [(list(m.to), m.subject, m.text) for m in memory.sent], MemoryMail(fail="down"))
    elif request.param == "smtp":
        with smtp_receiver() as inbox:

            def received() -> list[tuple[list[str], str, str]]:
                found = []
                for recipients, data in inbox.messages:
                    message = email.message_from_bytes(data)
                    found.append((recipients, str(message["Subject"]), message.get_payload(decode=True).decode()))
                return found

            yield Case(SmtpMail("127.0.0.1", inbox.port, SENDER), received, SmtpMail("127.0.0.1", _closed_port()))
    else:
        endpoint = request.getfixturevalue("moto_endpoint")
        ses = boto3.client("ses", endpoint_url=endpoint, region_name="us-east-1")
        ses.verify_email_identity(EmailAddress=SENDER)

        def sent() -> list[tuple[list[str], str, str]]:
            """SES keeps no readable copy: as many (recipient, subject unknown) entries as it counted deliveries."""
            count = int(ses.get_send_quota()["SentLast24Hours"]) - before
            return [(["?"] * count, "Run Applied: acme/app", "It applied.\n")] if count else []

        before = int(ses.get_send_quota()["SentLast24Hours"])
        yield Case(SesMail(ses, SENDER), sent, SesMail(ses, "unverified@example.com"))


def test_a_message_reaches_every_recipient(case: Case) -> None:
    result = case.mail.send(["a@example.com", "b@example.com"], "Run Applied: acme/app", "It applied.\n", 5.0)
    assert result.ok, result.detail
    [(recipients, subject, text)] = [m for m in case.delivered() if m[1] == "Run Applied: acme/app"]
    assert len(recipients) == 2 and (
        recipients == ["?"] * 2 or sorted(recipients) == ["a@example.com", "b@example.com"]
    )
    assert "It applied." in text


def test_no_recipients_is_a_failure(case: Case) -> None:
    result = case.mail.send([], "subject", "text", 5.0)
    assert not result.ok and "recipients" in result.detail


def test_a_server_that_cannot_send_is_a_failed_result(case: Case) -> None:
    result = case.failing.send(["a@example.com"], "subject", "text", 5.0)
    assert not result.ok and result.detail
