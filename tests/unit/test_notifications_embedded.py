"""The embedded server's e-mail: `TERRACE_SMTP_*` wire the SMTP adapter, so enabling an e-mail configuration
through the API sends its verification to a real SMTP receiver on loopback, from `TERRACE_MAIL_FROM`."""

from __future__ import annotations

import email
from pathlib import Path

from smtp_receiver import smtp_receiver
from state_helpers import embedded_env


def test_an_email_configuration_is_verified_through_the_smtp_server(tmp_path: Path) -> None:
    with smtp_receiver() as inbox:
        settings = {"smtp_host": "127.0.0.1", "smtp_port": inbox.port, "mail_from": "terrace@example.com",
                    "url_signing_secret": "s"}  # fmt: skip
        with embedded_env(tmp_path / "data", "local", **settings) as env:
            addresses = ["ops@example.com", "oncall@example.com"]
            attributes = {"name": "ops mail", "destination-type": "email", "enabled": True,
                          "email-addresses": addresses, "triggers": ["run:errored"]}  # fmt: skip
            created = env.client.post(
                f"/api/v2/workspaces/{env.ws_id}/notification-configurations",
                headers={"Authorization": f"Bearer {env.token}", "Content-Type": "application/vnd.api+json"},
                json={"data": {"type": "notification-configurations", "attributes": attributes}},
            )
            assert created.status_code == 201, created.text
            [response] = created.json()["data"]["attributes"]["delivery-responses"]
            assert response["successful"] is True
    [(recipients, data)] = inbox.messages
    message = email.message_from_bytes(data)
    assert sorted(recipients) == ["oncall@example.com", "ops@example.com"]
    assert message["From"] == "terrace@example.com" and "Verification of ops mail" in str(message["Subject"])
