"""Notifications (services/notifications/): configurations on workspaces, teams and projects, and their delivery through
the events queue (`subscribe_notifications`, called where the container's `EventService` is built).

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters and its
other services (what this area takes from the others is declared below as plain attributes)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from terrace.adapters.encryptor import Encryptor
from terrace.adapters.events import EventPublisher, EventQueue
from terrace.adapters.mail import Mail
from terrace.adapters.outbound import Outbound
from terrace.adapters.table import Table
from terrace.config import Settings

if TYPE_CHECKING:
    from terrace.services.access.accounts import AccountService
    from terrace.services.access.memberships import MembershipService
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.access.projects import ProjectService
    from terrace.services.access.teams import TeamService
    from terrace.services.events import EventService
    from terrace.services.notifications.configurations import NotificationConfigurations
    from terrace.services.notifications.delivery import NotificationDelivery
    from terrace.services.notifications.store import NotificationStore
    from terrace.services.runs.store import RunStore
    from terrace.services.workspaces.workspaces import WorkspaceService


class NotificationServices:
    settings: Settings
    table: Table
    encryptor: Encryptor
    publisher: EventPublisher
    event_queue: EventQueue | None
    outbound: Outbound
    mail: Mail
    site_mail: Mail  # `mail`, or the site admin's SMTP server when enabled (`wiring/admin_services.py`)
    # from the other areas
    accounts: AccountService
    organizations: OrganizationService
    teams: TeamService
    memberships: MembershipService
    projects: ProjectService
    workspaces: WorkspaceService
    run_store: RunStore

    @cached_property
    def notification_store(self) -> NotificationStore:
        from terrace.services.notifications.store import NotificationStore

        return NotificationStore(self.table)

    @cached_property
    def notification_configurations(self) -> NotificationConfigurations:
        from terrace.domain.destinations import Allowance
        from terrace.services.notifications.configurations import NotificationConfigurations

        return NotificationConfigurations(
            self.notification_store,
            self.encryptor,
            self.workspaces,
            self.teams,
            self.memberships,
            Allowance.parse(self.settings.outbound_allow),
            verifier=lambda nc: self.notification_delivery.verify(nc),
            projects=self.projects,
        )

    @cached_property
    def notification_delivery(self) -> NotificationDelivery:
        from terrace.services.notifications.delivery import NotificationDelivery

        return NotificationDelivery(
            self.notification_store,
            self.notification_configurations,
            self.outbound,
            self.site_mail,
            self._publish_later,
            run_store=self.run_store,
            workspaces=self.workspaces,
            organizations=self.organizations,
            accounts=self.accounts,
            public_url=self.settings.public_url,
            retry_base_s=self.settings.notification_retry_base_s,
        )

    def _publish_later(self, event: dict[str, Any], delay_s: int) -> None:
        """On the events queue (delayed where the queue can: SQS, SQLite); unit tests' publisher records it."""
        if self.event_queue is not None:
            self.event_queue.publish(event, delay_s)
        else:
            self.publisher.publish(event)

    def subscribe_notifications(self, events: EventService) -> None:
        from terrace.domain.auto_destroy import REMINDER_EVENT, RESULT_EVENT
        from terrace.services.notifications.delivery import DELIVERY
        from terrace.services.runs.assessments import COMPLETED as ASSESSMENT_COMPLETED

        events.subscribe("run.status_changed", lambda event: self.notification_delivery.on_run_status(event))
        events.subscribe(DELIVERY, lambda event: self.notification_delivery.deliver(event))
        for notice in (REMINDER_EVENT, RESULT_EVENT):  # ephemeral workspaces (workflows/auto_destroy.py)
            events.subscribe(notice, lambda event: self.notification_delivery.on_auto_destroy(event))
        events.subscribe(ASSESSMENT_COMPLETED, lambda event: self.notification_delivery.on_assessment(event))
