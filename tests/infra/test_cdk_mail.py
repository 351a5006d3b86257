"""Notification e-mails on AWS: with `terrace:mailFrom`, the api (verifications) and events (deliveries) functions
get TERRACE_MAIL_FROM and may send through SES from that identity (or its domain) only; without it, neither."""

from __future__ import annotations

import json
from typing import Any


def _ses_statements(synth: Any) -> list[dict[str, Any]]:
    found = []
    for policy in synth.resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if any(str(a).startswith("ses:") for a in actions):
                found.append(statement)
    return found


def test_without_a_sender_no_function_sends_mail(synth: Any) -> None:
    assert _ses_statements(synth) == []
    _, fn = synth.by_path("/Api/Handler/Resource")
    assert "TERRACE_MAIL_FROM" not in fn["Properties"]["Environment"]["Variables"]


def test_a_sender_lets_the_api_and_events_functions_send_as_it(synth_options: Any) -> None:
    statements = _ses_statements(synth_options)
    assert len(statements) == 2
    for statement in statements:
        assert statement["Action"] == "ses:SendEmail"
        resources = json.dumps(statement["Resource"])
        assert "identity/terrace@example.com" in resources and "identity/example.com" in resources
        assert "identity/*" not in resources
    for path in ("/Api/Handler/Resource", "/Functions/Events/Resource"):
        _, fn = synth_options.by_path(path)
        assert fn["Properties"]["Environment"]["Variables"]["TERRACE_MAIL_FROM"] == "terrace@example.com"
