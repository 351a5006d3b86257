"""Notification payloads and triggers, pure: TFC's generic payload and its HMAC-SHA512 signature, Slack's and
Microsoft Teams' formats, and the table from the statuses a run passes to the triggers it fires."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from terrace.domain import notification_payloads as payloads
from terrace.domain.notification_payloads import Notice, RunFacts
from terrace.domain.notifications import message_of, triggers_of

RUN = RunFacts(
    run_id="run-abc",
    run_url="https://terrace.example/app/acme/workspaces/app/runs/run-abc",
    message="Add five new queue workers",
    created_at="2026-01-25T18:34:00Z",
    created_by="alice",
    workspace_id="ws-123",
    workspace_name="app",
    organization_name="acme",
)
NOTICE = Notice("Run Canceled", "run:errored", "canceled", "2026-01-25T18:37:04Z")


def test_generic_payload_has_tfc_shape() -> None:
    body = json.loads(payloads.generic("nc-1", RUN, NOTICE, subscribable={}))
    assert body == {
        "payload_version": 1,
        "notification_configuration_id": "nc-1",
        "run_url": RUN.run_url,
        "run_id": "run-abc",
        "run_message": "Add five new queue workers",
        "run_created_at": "2026-01-25T18:34:00Z",
        "run_created_by": "alice",
        "workspace_id": "ws-123",
        "workspace_name": "app",
        "organization_name": "acme",
        "notifications": [
            {
                "message": "Run Canceled",
                "trigger": "run:errored",
                "run_status": "canceled",
                "run_updated_at": "2026-01-25T18:37:04Z",
                "run_updated_by": None,
            }
        ],
    }


def test_verification_payload_names_the_workspace_and_no_run() -> None:
    notice = Notice("Verification of hooks", "verification", None, None)
    subscribable = {"workspace_id": "ws-1", "workspace_name": "app", "organization_name": "acme"}
    body = json.loads(payloads.generic("nc-1", None, notice, subscribable=subscribable))
    assert body["run_id"] is None and body["workspace_name"] == "app" and body["organization_name"] == "acme"
    assert body["notifications"][0]["trigger"] == "verification"


def test_signature_is_hex_hmac_sha512_of_the_body_keyed_by_the_token() -> None:
    body = payloads.generic("nc-1", RUN, NOTICE, subscribable={})
    headers = payloads.headers(body, "s3cret")
    expected = hmac.new(b"s3cret", body, hashlib.sha512).hexdigest()
    assert headers["X-TFE-Notification-Signature"] == expected and len(expected) == 128
    assert headers["Content-Type"] == "application/json"
    assert "X-TFE-Notification-Signature" not in payloads.headers(body, None)
    assert "X-TFE-Notification-Signature" not in payloads.headers(body, "")


def test_slack_and_teams_formats() -> None:
    slack = json.loads(payloads.slack("hooks", RUN, NOTICE))
    [attachment] = slack["attachments"]
    assert attachment["title_link"] == RUN.run_url and attachment["color"] == "#e74c3c"
    assert "Run Canceled" in slack["text"]
    card = json.loads(payloads.teams("hooks", RUN, NOTICE))
    assert card["@type"] == "MessageCard" and card["@context"] == "http://schema.org/extensions"
    assert card["potentialAction"][0]["targets"][0]["uri"] == RUN.run_url
    subject, text = payloads.email("hooks", RUN, NOTICE)
    assert "acme/app" in subject and RUN.run_url in text


@pytest.mark.parametrize(
    ("statuses", "final", "fired"),
    [
        (["pending"], "pending", [("run:created", "pending")]),
        (["plan_queued"], "plan_queued", []),
        (["planning"], "planning", [("run:planning", "planning")]),
        (["plan_queued", "planning"], "planning", [("run:planning", "planning")]),
        (["planned"], "planned", [("run:needs_attention", "planned")]),
        (
            ["planned", "cost_estimating", "cost_estimated"],
            "cost_estimated",
            [("run:needs_attention", "cost_estimated")],
        ),
        (["planned", "confirmed"], "confirmed", []),  # auto-apply: never waited
        (["planned", "cost_estimating", "cost_estimated", "confirmed"], "confirmed", []),
        (["applying"], "applying", [("run:applying", "applying")]),
        (["applied"], "applied", [("run:completed", "applied")]),
        (["planned", "planned_and_finished"], "planned_and_finished", [("run:completed", "planned_and_finished")]),
        (["planned_and_saved"], "planned_and_saved", [("run:completed", "planned_and_saved")]),
        (["errored"], "errored", [("run:errored", "errored")]),
        (["canceled"], "canceled", [("run:errored", "canceled")]),
        (["force_canceled"], "force_canceled", [("run:errored", "force_canceled")]),
        (["discarded"], "discarded", []),
        # a failed mandatory policy: the run waits for an override, then (overridden) for a confirmation
        (
            ["post_plan_awaiting_decision"],
            "post_plan_awaiting_decision",
            [("run:needs_attention", "post_plan_awaiting_decision")],
        ),
        (["post_plan_completed"], "post_plan_completed", [("run:needs_attention", "post_plan_completed")]),
        (["post_plan_completed", "confirmed"], "confirmed", []),  # auto-apply after its checks: never waited
        (
            ["pending", "plan_queued", "planning"],
            "planning",
            [("run:created", "pending"), ("run:planning", "planning")],
        ),
    ],
)
def test_trigger_table(statuses: list[str], final: str, fired: list[tuple[str, str]]) -> None:
    assert triggers_of(statuses, final) == fired


def test_messages() -> None:
    assert message_of("run:errored", "canceled") == "Run Canceled"
    assert message_of("run:completed", "planned_and_finished") == "Run Planned And Finished"
    assert message_of("run:needs_attention", "planned") == "Run Needs Attention"
    assert message_of("run:created", "pending") == "Run Created"
