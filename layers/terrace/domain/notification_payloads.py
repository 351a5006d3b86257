"""What a notification sends, per destination type, as TFC sends it: the generic JSON payload (`payload_version`
1) signed with the configuration's token (`X-TFE-Notification-Signature`: hex HMAC-SHA512 of the body), Slack's
incoming-webhook message, a Microsoft Teams MessageCard, and an e-mail's subject and text. Pure."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

from terrace.domain.notifications import EMAIL, RUN_COMPLETED, RUN_ERRORED, RUN_NEEDS_ATTENTION, SLACK, TEAMS

SIGNATURE_HEADER = "X-TFE-Notification-Signature"
USER_AGENT = "Terrace-Notifications"
VERIFICATION = "verification"


@dataclass(frozen=True)
class RunFacts:
    """What a notification tells of its run (None for a verification)."""

    run_id: str
    run_url: str
    message: str
    created_at: str
    created_by: str | None
    workspace_id: str
    workspace_name: str
    organization_name: str


@dataclass(frozen=True)
class Notice:
    message: str  # "Run Applied"
    trigger: str  # "run:completed", or "verification"
    run_status: str | None
    run_updated_at: str | None
    run_updated_by: str | None = None


def generic(configuration_id: str, run: RunFacts | None, notice: Notice, *, subscribable: dict[str, str]) -> bytes:
    """TFC's generic payload; a verification carries nulls where a run's facts go."""
    body: dict[str, Any] = {
        "payload_version": 1,
        "notification_configuration_id": configuration_id,
        "run_url": run.run_url if run else None,
        "run_id": run.run_id if run else None,
        "run_message": run.message if run else None,
        "run_created_at": run.created_at if run else None,
        "run_created_by": run.created_by if run else None,
        "workspace_id": run.workspace_id if run else subscribable.get("workspace_id"),
        "workspace_name": run.workspace_name if run else subscribable.get("workspace_name"),
        "organization_name": run.organization_name if run else subscribable.get("organization_name"),
        "notifications": [
            {
                "message": notice.message,
                "trigger": notice.trigger,
                "run_status": notice.run_status,
                "run_updated_at": notice.run_updated_at,
                "run_updated_by": notice.run_updated_by,
            }
        ],
    }
    return json.dumps(body, separators=(",", ":")).encode()


def signature(token: str, body: bytes) -> str:
    return hmac.new(token.encode(), body, hashlib.sha512).hexdigest()


def headers(body: bytes, token: str | None) -> dict[str, str]:
    """The request headers: JSON, and the signature when the configuration has a token (none without)."""
    found = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
    if token:
        found[SIGNATURE_HEADER] = signature(token, body)
    return found


_COLOURS = {RUN_COMPLETED: "#27ae60", RUN_ERRORED: "#e74c3c", RUN_NEEDS_ATTENTION: "#f39c12"}


def _title(run: RunFacts | None, notice: Notice, name: str) -> str:
    if run is None:
        return f"Verification of {name}"
    return f"{notice.message}: {run.organization_name}/{run.workspace_name}"


def slack(name: str, run: RunFacts | None, notice: Notice) -> bytes:
    """Slack's incoming-webhook message: one attachment, coloured by outcome, linking the run."""
    attachment: dict[str, Any] = {
        "fallback": _title(run, notice, name),
        "color": _COLOURS.get(notice.trigger, "#5c4ee5"),
        "title": _title(run, notice, name),
        "text": run.message if run else "This configuration can deliver notifications.",
        "fields": [],
    }
    if run is not None:
        attachment["title_link"] = run.run_url
        attachment["fields"] = [
            {"title": "Run", "value": f"<{run.run_url}|{run.run_id}>", "short": True},
            {"title": "Status", "value": notice.run_status or "", "short": True},
        ]
    return json.dumps({"text": _title(run, notice, name), "attachments": [attachment]}).encode()


def teams(name: str, run: RunFacts | None, notice: Notice) -> bytes:
    """A Microsoft Teams connector MessageCard."""
    card: dict[str, Any] = {
        "@type": "MessageCard",
        "@context": "http://schema.org/extensions",
        "summary": _title(run, notice, name),
        "themeColor": _COLOURS.get(notice.trigger, "#5c4ee5").lstrip("#"),
        "title": _title(run, notice, name),
        "sections": [
            {
                "activityTitle": run.message if run else "This configuration can deliver notifications.",
                "facts": (
                    [
                        {"name": "Run", "value": run.run_id},
                        {"name": "Status", "value": notice.run_status or ""},
                        {"name": "Workspace", "value": run.workspace_name},
                    ]
                    if run
                    else []
                ),
            }
        ],
    }
    if run is not None:
        card["potentialAction"] = [
            {"@type": "OpenUri", "name": "View run", "targets": [{"os": "default", "uri": run.run_url}]}
        ]
    return json.dumps(card).encode()


def email(name: str, run: RunFacts | None, notice: Notice) -> tuple[str, str]:
    """(subject, text) of a notification e-mail."""
    subject = _title(run, notice, name)
    if run is None:
        return subject, f"Terrace will send the notifications of {name} to this address.\n"
    lines = [
        f"{notice.message} in {run.organization_name}/{run.workspace_name}.",
        "",
        f"Run: {run.run_id} ({notice.run_status})",
        f"Message: {run.message}",
        f"Created at {run.created_at} by {run.created_by or 'unknown'}",
        "",
        run.run_url,
    ]
    return subject, "\n".join(lines) + "\n"


def body_for(destination_type: str, configuration_id: str, name: str, run: RunFacts | None, notice: Notice,
             subscribable: dict[str, str]) -> bytes:  # fmt: skip
    """The request body for an HTTP destination type."""
    if destination_type == SLACK:
        return slack(name, run, notice)
    if destination_type == TEAMS:
        return teams(name, run, notice)
    if destination_type == EMAIL:
        subject, text = email(name, run, notice)
        return json.dumps({"subject": subject, "text": text}).encode()
    return generic(configuration_id, run, notice, subscribable=subscribable)
