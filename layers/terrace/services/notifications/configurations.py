"""Notification configurations of workspaces (`/workspaces/:id/notification-configurations`) and teams
(`/teams/:id/notification-configurations`): create, read, update, delete, verify.

Who may: a workspace's configurations are its admins' (`Action.MANAGE_NOTIFICATIONS`: workspace admin access, or
the organization's owners); a team's are those who manage teams (the owners team's: owners). Anyone else who
cannot see the subscribable gets the same 404 as for a configuration that does not exist. The token is encrypted
(context: organization and configuration) and never returned. Enabling a configuration, and `actions/verify`,
send a verification at once (`NotificationDelivery.verify`): its answer, whatever it is, is recorded among the
configuration's `delivery-responses`, and the configuration is saved as asked.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Callable
from typing import Any

from terrace.adapters.encryptor import Encryptor
from terrace.domain import clock
from terrace.domain import notifications as model
from terrace.domain.destinations import Allowance
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.notifications import NotificationConfiguration
from terrace.domain.principal import Principal
from terrace.services.access.actions import Action
from terrace.services.access.memberships import MembershipService
from terrace.services.access.projects import ProjectService
from terrace.services.access.teams import TeamService
from terrace.services.notifications.store import NotificationStore
from terrace.services.workspaces.workspaces import WorkspaceService

Verifier = Callable[[NotificationConfiguration], NotificationConfiguration]


def token_context(nc: NotificationConfiguration) -> dict[str, str]:
    return {"organization": nc.organization, "notification-configuration": nc.id}


class NotificationConfigurations:
    def __init__(
        self,
        store: NotificationStore,
        encryptor: Encryptor,
        workspaces: WorkspaceService,
        teams: TeamService,
        memberships: MembershipService,
        allowance: Allowance,
        *,
        verifier: Verifier,
        projects: ProjectService,
    ) -> None:
        self._store, self._encryptor, self._projects = store, encryptor, projects
        self._workspaces, self._teams, self._memberships = workspaces, teams, memberships
        self._allowance = allowance
        self.verifier = verifier  # sends the verification (`NotificationDelivery.verify`)

    # who may --------------------------------------------------------------------------------------
    def _subscribable(self, principal: Principal, kind: str, subscribable_id: str) -> str:
        """The organization key of the workspace, team or project, checked for managing its notifications."""
        if kind == model.TEAM:
            return self._teams.get(principal, subscribable_id, Action.MANAGE_TEAMS).organization
        if kind == model.PROJECT:
            return self._projects.get(principal, subscribable_id, Action.MANAGE_PROJECTS).organization
        return self._workspaces.get(principal, subscribable_id, Action.MANAGE_NOTIFICATIONS).organization

    def _get(self, principal: Principal, configuration_id: str) -> NotificationConfiguration:
        nc = self._store.find(configuration_id)
        try:
            if nc is None:
                raise NotFound()
            self._subscribable(principal, nc.subscribable_type, nc.subscribable_id)
        except NotFound as exc:
            raise NotFound(f"notification configuration {configuration_id} not found") from exc
        return nc

    # reads ----------------------------------------------------------------------------------------
    def list(self, principal: Principal, kind: str, subscribable_id: str) -> builtins.list[NotificationConfiguration]:
        self._subscribable(principal, kind, subscribable_id)
        return self._store.of(subscribable_id)

    def get(self, principal: Principal, configuration_id: str) -> NotificationConfiguration:
        return self._get(principal, configuration_id)

    def of(self, subscribable_id: str) -> builtins.list[NotificationConfiguration]:
        """Without a check: for the delivery (the events worker) and deletions."""
        return self._store.of(subscribable_id)

    def token_of(self, nc: NotificationConfiguration) -> str | None:
        if not nc.token_ciphertext:
            return None
        return self._encryptor.decrypt(nc.token_ciphertext, token_context(nc))

    # writes ---------------------------------------------------------------------------------------
    def create(
        self,
        principal: Principal,
        kind: str,
        subscribable_id: str,
        attrs: dict[str, Any],
        relationships: dict[str, Any],
    ) -> NotificationConfiguration:
        organization = self._subscribable(principal, kind, subscribable_id)
        destination = model.check_destination(attrs.get("destination-type"))
        now = clock.now_iso()
        nc = NotificationConfiguration(
            id=new_id("nc"),
            subscribable_type=kind,
            subscribable_id=subscribable_id,
            organization=organization,
            name=model.check_name(attrs.get("name")),
            destination_type=destination,
            enabled=model.check_enabled(attrs.get("enabled", False)),
            url=model.check_url_for(destination, attrs.get("url"), self._allowance),
            triggers=[],
            created_at=now,
            updated_at=now,
        )
        nc.triggers = model.check_triggers(attrs.get("triggers"), nc.allowed_triggers)
        self._email_fields(nc, attrs, relationships)
        token = model.check_token(attrs.get("token"))
        if token:
            nc.token_ciphertext = self._encryptor.encrypt(token, token_context(nc))
        self._store.create(nc)
        return self.verifier(nc) if nc.enabled else nc

    def update(
        self, principal: Principal, configuration_id: str, attrs: dict[str, Any], relationships: dict[str, Any]
    ) -> NotificationConfiguration:
        current = self._get(principal, configuration_id)
        nc = dataclasses.replace(current, updated_at=clock.now_iso())
        if "name" in attrs:
            nc.name = model.check_name(attrs["name"])
        if "enabled" in attrs:
            nc.enabled = model.check_enabled(attrs["enabled"])
        if "triggers" in attrs:
            nc.triggers = model.check_triggers(attrs["triggers"], nc.allowed_triggers)
        if "url" in attrs or (nc.destination_type != model.EMAIL and not nc.url):
            nc.url = model.check_url_for(nc.destination_type, attrs.get("url", nc.url), self._allowance)
        if "token" in attrs:
            token = model.check_token(attrs["token"])
            nc.token_ciphertext = self._encryptor.encrypt(token, token_context(nc)) if token else None
        if nc.destination_type == model.EMAIL:
            self._email_fields(nc, attrs, relationships, keep=True)
        self._store.replace(nc, current.version)  # Conflict when it changed since it was read
        return self.verifier(nc) if nc.enabled and not current.enabled else nc

    def _email_fields(
        self, nc: NotificationConfiguration, attrs: dict[str, Any], relationships: dict[str, Any], keep: bool = False
    ) -> None:
        """`email-addresses` (TFE) and the `users` relationship: members of the configuration's organization.
        An update that names neither keeps the addresses and empties the users, as TFC does."""
        if nc.destination_type != model.EMAIL:
            if attrs.get("email-addresses") or model.user_ids(relationships):
                raise Invalid(
                    "e-mail recipients are for destination-type email", pointer="/data/attributes/email-addresses"
                )
            return
        if "email-addresses" in attrs or not keep:
            nc.email_addresses = model.check_emails(attrs.get("email-addresses"))
        users = model.user_ids(relationships) or []
        members = self._memberships.member_keys(users, [nc.organization]) if users else {}
        strangers = [u for u in users if nc.organization not in members.get(u, set())]
        if strangers:
            raise NotFound(f"user {strangers[0][:64]} not found")
        nc.email_user_ids = users

    def delete(self, principal: Principal, configuration_id: str) -> None:
        self._store.delete(self._get(principal, configuration_id))

    def verify(self, principal: Principal, configuration_id: str) -> NotificationConfiguration:
        return self.verifier(self._get(principal, configuration_id))

    def delete_all(self, subscribable_id: str) -> None:
        """Every configuration of a team being deleted (no check: the deletion checked; a workspace's go with the
        rest of it, `services/workflows/purge.py`)."""
        self._store.delete_all_of(team=subscribable_id)
