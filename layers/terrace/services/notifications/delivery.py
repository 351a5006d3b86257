"""Delivering notifications, off the request path.

`on_run_status` (subscribed to `run.status_changed` by `wiring/`) maps the statuses a run passed to triggers
(`domain/notifications.py: triggers_of`) and, for each enabled configuration of the workspace that wants one,
publishes one `notification.delivery` event on the events queue carrying the body to send (built once, so every
attempt sends the same bytes). `deliver` (the events worker) sends it — an HTTP POST through the outbound port,
with a timeout, signed at send time with the configuration's current token; or an e-mail — and records the answer
among the configuration's last responses. A failure is published again with a back-off delay, up to
`MAX_ATTEMPTS` in all. Each attempt is recorded once (`store.record` with the attempt's key): the queue delivers
at least once, and a redelivered event neither sends an attempt already recorded nor records it twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from terrace.adapters.mail import Mail
from terrace.adapters.outbound import Outbound
from terrace.domain import auto_destroy as ad
from terrace.domain import clock
from terrace.domain import notification_payloads as payloads
from terrace.domain import notifications as model
from terrace.domain.errors import NotFound
from terrace.domain.notification_payloads import Notice, RunFacts
from terrace.domain.notifications import NotificationConfiguration
from terrace.domain.projects import default_project_id
from terrace.services.access.accounts import AccountService
from terrace.services.access.organizations import OrganizationService
from terrace.services.notifications.configurations import NotificationConfigurations
from terrace.services.notifications.store import NotificationStore
from terrace.services.runs.store import RunStore
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.notifications")

DELIVERY = "notification.delivery"
MAX_ATTEMPTS = 5
TIMEOUT_S = 10.0  # one delivery's request
VERIFY_TIMEOUT_S = 5.0  # a verification answers the API request that sent it
MAX_DELAY_S = 900  # SQS's longest delay

Publish = Callable[[dict[str, Any], int], None]


class NotificationDelivery:
    def __init__(
        self,
        store: NotificationStore,
        configurations: NotificationConfigurations,
        outbound: Outbound,
        mail: Mail,
        publish: Publish,
        *,
        run_store: RunStore,
        workspaces: WorkspaceService,
        organizations: OrganizationService,
        accounts: AccountService,
        public_url: str,
        retry_base_s: int,
    ) -> None:
        self._store, self._configurations = store, configurations
        self._outbound, self._mail, self._publish = outbound, mail, publish
        self._runs, self._workspaces, self._orgs, self._accounts = run_store, workspaces, organizations, accounts
        self._public_url, self._retry_base_s = public_url, retry_base_s

    def _configurations_of(self, workspace_id: str) -> list[NotificationConfiguration]:
        """A workspace's configurations and its project's."""
        found = self._store.of(workspace_id)
        try:
            ws = self._workspaces.load(workspace_id) if workspace_id else None
        except NotFound:
            ws = None
        project_id = (ws.project_id or default_project_id(ws.organization)) if ws else None
        return found + (self._store.of(project_id) if project_id else [])

    # a run changed status: one delivery event per configuration and trigger ---------------------------
    def on_run_status(self, event: dict[str, Any]) -> None:
        wanted = [
            nc for nc in self._configurations_of(str(event.get("workspace_id", ""))) if nc.enabled and nc.triggers
        ]
        final = str(event.get("to", ""))
        statuses = event.get("statuses") or [final]
        pairs = model.triggers_of([str(s) for s in statuses], final)
        if not wanted or not pairs:
            return
        facts = self.run_facts(str(event["run_id"]))
        if facts is None:  # gone, or a health assessment (`on_assessment`)
            return
        at = str(event.get("at") or clock.now_iso())
        for nc in wanted:
            for trigger, status in pairs:
                if trigger not in nc.triggers:
                    continue
                notice = Notice(model.message_of(trigger, status), trigger, status, at)
                delivery = {
                    "type": DELIVERY,
                    "configuration_id": nc.id,
                    "delivery_id": f"{facts.run_id}:{status}:{at}",
                    "attempt": 1,
                    **self._content(nc, facts, notice),
                }
                self._publish(delivery, 0)

    # an ephemeral workspace's reminder, or its auto-destroy run's result (`workflows/auto_destroy.py`) --------
    def on_auto_destroy(self, event: dict[str, Any]) -> None:
        reminder = event.get("type") == ad.REMINDER_EVENT
        trigger = ad.REMINDER_TRIGGER if reminder else ad.RESULT_TRIGGER
        configurations = self._configurations_of(str(event.get("workspace_id", "")))
        wanted = [nc for nc in configurations if nc.enabled and trigger in nc.triggers]
        if not wanted:
            return
        at = str(event.get("at") or clock.now_iso())
        if reminder:
            facts, status = None, None
            message = f"Auto-destroy in {event.get('hours')} hours (at {event.get('auto_destroy_at')})"
            delivery_id = f"{event.get('workspace_id')}:reminder:{event.get('auto_destroy_at')}:{event.get('hours')}"
        else:
            facts, status = self.run_facts(str(event.get("run_id", ""))), str(event.get("status", ""))
            if facts is None:
                return
            message = f"Auto-destroy run {status.replace('_', ' ')}"
            delivery_id = f"{facts.run_id}:auto-destroy:{status}"
        for nc in wanted:
            content = self._content(nc, facts, Notice(message, trigger, status, at))
            self._publish({"type": DELIVERY, "configuration_id": nc.id, "delivery_id": delivery_id, "attempt": 1,
                           **content}, 0)  # fmt: skip

    def on_assessment(self, event: dict[str, Any]) -> None:
        """A health assessment ended (`assessment.completed`): its triggers, to the configurations that want them."""
        fired = [str(t) for t in event.get("triggers") or []]
        wanted = [
            nc for nc in self._configurations_of(str(event.get("workspace_id", ""))) if nc.enabled and nc.triggers
        ]
        if not fired or not wanted:
            return
        facts = self.run_facts(str(event["run_id"]), assessment=True)
        at = str(event.get("at") or clock.now_iso())
        for nc in wanted:
            for trigger in (t for t in fired if t in nc.triggers):
                notice = Notice(model.ASSESSMENT_MESSAGES.get(trigger, trigger), trigger, None, at)
                delivery_id = f"{event.get('result_id')}:{trigger}"
                self._publish({"type": DELIVERY, "configuration_id": nc.id, "delivery_id": delivery_id,
                               "attempt": 1, **self._content(nc, facts, notice)}, 0)  # fmt: skip

    def _content(self, nc: NotificationConfiguration, run: RunFacts | None, notice: Notice) -> dict[str, Any]:
        if nc.destination_type == model.EMAIL:
            subject, text = payloads.email(nc.name, run, notice)
            return {"subject": subject, "text": text}
        body = payloads.body_for(nc.destination_type, nc.id, nc.name, run, notice, self._subscribable(nc))
        return {"body": body.decode()}

    def run_facts(self, run_id: str, *, assessment: bool = False) -> RunFacts | None:
        """What a notification says of a run (None: gone, a query or test run, or an assessment's run unless
        `assessment`)."""
        try:
            run = self._runs.load(run_id)
            ws = self._workspaces.load(run.workspace_id)
        except NotFound:
            return None
        if (run.assessment and not assessment) or run.query or run.test:
            return None
        org = self._orgs.by_key(run.organization)
        return RunFacts(
            run_id=run.id,
            run_url=f"{self._public_url}/app/{org.name}/workspaces/{ws.name}/runs/{run.id}",
            message=run.message,
            created_at=run.created_at,
            created_by=run.created_by or None,  # a username
            workspace_id=ws.id,
            workspace_name=ws.name,
            organization_name=org.name,
        )

    def _subscribable(self, nc: NotificationConfiguration) -> dict[str, str]:
        try:
            found = {"organization_name": self._orgs.by_key(nc.organization).name}
        except NotFound:
            return {}
        if nc.subscribable_type == model.WORKSPACE:
            try:
                ws = self._workspaces.load(nc.subscribable_id)
                found |= {"workspace_id": ws.id, "workspace_name": ws.name}
            except NotFound:
                pass
        return found

    # the events worker: one attempt ---------------------------------------------------------------
    def deliver(self, event: dict[str, Any]) -> None:
        nc = self._store.find(str(event.get("configuration_id", "")))
        if nc is None or not nc.enabled:
            return
        delivery_id, attempt = str(event["delivery_id"]), int(event.get("attempt", 1))
        done = self._store.attempt(nc.id, delivery_id, attempt)
        if done is not None:  # redelivered: sent and recorded already; make sure its retry is on its way
            if not done.get("successful"):
                self._retry(event, attempt)
            return
        response = self._send(nc, event, TIMEOUT_S)
        self._store.record(nc.id, response, (delivery_id, attempt))
        if not response["successful"]:
            log.info("notification %s attempt %d to %s failed: %s", nc.id, attempt, nc.url, response["body"][:200])
            self._retry(event, attempt)

    def _retry(self, event: dict[str, Any], attempt: int) -> None:
        if attempt >= MAX_ATTEMPTS:
            return
        delay = min(MAX_DELAY_S, self._retry_base_s * 2 ** (attempt - 1))
        self._publish({**event, "attempt": attempt + 1}, delay)

    def verify(self, nc: NotificationConfiguration) -> NotificationConfiguration:
        """Send a verification now and record its answer (the API request waits, at most VERIFY_TIMEOUT_S)."""
        if nc.destination_type == model.EMAIL and not self._recipients(nc):
            return nc
        notice = Notice(f"Verification of {nc.name}", payloads.VERIFICATION, None, None)
        response = self._send(nc, self._content(nc, None, notice), VERIFY_TIMEOUT_S)
        return self._store.record(nc.id, response) or nc

    def _send(self, nc: NotificationConfiguration, content: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        sent_at = clock.now_iso()
        if nc.destination_type == model.EMAIL:
            recipients = self._recipients(nc)
            result = self._mail.send(recipients, str(content["subject"]), str(content["text"]), timeout_s)
            return _response(", ".join(recipients), result.detail, None, {}, sent_at, result.ok)
        body = str(content["body"]).encode()
        answer = self._outbound.post(
            nc.url or "", body, payloads.headers(body, self._configurations.token_of(nc)), timeout_s
        )
        text = answer.body if answer.status is not None else (answer.error or "no answer")
        return _response(nc.url or "", text, answer.status, answer.headers, sent_at, answer.ok)

    def _recipients(self, nc: NotificationConfiguration) -> list[str]:
        users = self._accounts.get_users(nc.email_user_ids) if nc.email_user_ids else []
        return list(dict.fromkeys([*nc.email_addresses, *(u.email for u in users if u.email)]))


def _response(url: str, body: str, code: int | None, headers: dict[str, list[str]], sent_at: str, ok: bool
              ) -> dict[str, Any]:  # fmt: skip
    """One entry of `delivery-responses`, in TFC's shape."""
    return {"url": url, "body": body, "code": code, "headers": headers, "sent-at": sent_at, "successful": ok}
