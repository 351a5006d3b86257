"""Storage of notification configurations (`nc-…`, sort key `nc`, listed oldest first through gsi1
`<subscribable>#ncs`) and of the delivery attempts already recorded (`<nc>#attempts`, kept a week), so a
redelivered event records nothing twice. The only module of `services/notifications/` that knows the table:
the item mapping (`to_item`/`from_item`) is here, the entity and its rules in `domain/notifications.py`.
`delete_all_of` removes the configurations of a workspace or a team (with their attempts)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from terrace.adapters.table import ConditionFailed, Put, Table
from terrace.domain import clock
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.ids import looks_like
from terrace.domain.notifications import NotificationConfiguration, kept
from terrace.services.optimistic import optimistic

log = logging.getLogger("terrace.notifications")
SORT_KEY = "nc"
ATTEMPT_TTL_S = 7 * 24 * 3600


def attempt_key(configuration_id: str, delivery_id: str, attempt: int) -> tuple[str, str]:
    return f"{configuration_id}#attempts", f"{delivery_id}#{attempt:02d}"


def listed_under(subscribable_id: str) -> str:
    """The gsi1 partition of a workspace's or team's configurations (`gsi1sk`: `<created_at>#<nc id>`)."""
    return f"{subscribable_id}#ncs"


def to_item(nc: NotificationConfiguration) -> dict[str, Any]:
    return {
        "pk": nc.id,
        "sk": SORT_KEY,
        "gsi1pk": listed_under(nc.subscribable_id),
        "gsi1sk": f"{nc.created_at}#{nc.id}",
        "subscribable_type": nc.subscribable_type,
        "subscribable_id": nc.subscribable_id,
        "organization": nc.organization,
        "name": nc.name,
        "destination_type": nc.destination_type,
        "enabled": nc.enabled,
        "url": nc.url,
        "triggers": list(nc.triggers),
        "created_at": nc.created_at,
        "updated_at": nc.updated_at,
        "token_ciphertext": nc.token_ciphertext,
        "email_addresses": list(nc.email_addresses),
        "email_user_ids": list(nc.email_user_ids),
        "delivery_responses": list(nc.delivery_responses),
        "version": nc.version,
    }


def from_item(item: Mapping[str, Any]) -> NotificationConfiguration:
    return NotificationConfiguration(
        id=item["pk"],
        subscribable_type=item["subscribable_type"],
        subscribable_id=item["subscribable_id"],
        organization=item["organization"],
        name=item["name"],
        destination_type=item["destination_type"],
        enabled=bool(item["enabled"]),
        url=item.get("url"),
        triggers=list(item.get("triggers") or []),
        created_at=item["created_at"],
        updated_at=item["updated_at"],
        token_ciphertext=item.get("token_ciphertext"),
        email_addresses=list(item.get("email_addresses") or []),
        email_user_ids=list(item.get("email_user_ids") or []),
        delivery_responses=list(item.get("delivery_responses") or []),
        version=int(item.get("version", 1)),
    )


class NotificationStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def find(self, configuration_id: str) -> NotificationConfiguration | None:
        item = self._table.get(configuration_id, SORT_KEY) if looks_like(configuration_id, "nc") else None
        return from_item(item) if item else None

    def load(self, configuration_id: str) -> NotificationConfiguration:
        found = self.find(configuration_id)
        if found is None:
            raise NotFound(f"notification configuration {configuration_id} not found")
        return found

    def of(self, subscribable_id: str) -> list[NotificationConfiguration]:
        """Oldest first."""
        return [from_item(item) for item in self._table.query(listed_under(subscribable_id), index="gsi1")]

    def create(self, nc: NotificationConfiguration) -> None:
        self._table.put(to_item(nc), if_absent=True)

    def replace(self, nc: NotificationConfiguration, expected_version: int) -> None:
        """Write `nc` over the version read (`expected_version`); Conflict (409) when it changed since."""
        nc.version = expected_version + 1
        try:
            self._table.put(to_item(nc), if_version=expected_version)
        except ConditionFailed as exc:
            raise Conflict(f"notification configuration {nc.id} changed concurrently; retry") from exc

    def delete(self, nc: NotificationConfiguration) -> None:
        attempts = self._table.query(f"{nc.id}#attempts")
        if attempts:
            self._table.batch_delete([(a["pk"], a["sk"]) for a in attempts])
        self._table.delete(nc.id, SORT_KEY)

    def delete_all_of(
        self, *, workspace: str | None = None, team: str | None = None, project: str | None = None
    ) -> None:
        """Every configuration of a workspace, a team or a project, with its recorded attempts (no check: the
        deletion of the workspace, team, project or organization checked)."""
        given = [s for s in (workspace, team, project) if s]
        if len(given) != 1:
            raise ValueError("delete_all_of takes a workspace, a team or a project")
        subscribable = given[0]
        for nc in self.of(subscribable):
            self.delete(nc)

    def attempt(self, configuration_id: str, delivery_id: str, attempt: int) -> dict[str, Any] | None:
        return self._table.get(*attempt_key(configuration_id, delivery_id, attempt))

    def record(
        self, configuration_id: str, response: dict[str, Any], attempt: tuple[str, int] | None = None
    ) -> NotificationConfiguration | None:
        """Add `response` to the configuration's last responses; with `attempt` (delivery id, number) only once
        per attempt. None when the configuration is gone or the attempt was recorded already."""

        def step() -> NotificationConfiguration | None:
            nc = self.find(configuration_id)
            if nc is None:
                return None
            ops: list[Any] = []
            if attempt is not None:
                pk, sk = attempt_key(configuration_id, *attempt)
                if self._table.get(pk, sk) is not None:
                    return None
                ops.append(Put({"pk": pk, "sk": sk, "successful": response["successful"],
                                "expires_at": int(clock.epoch()) + ATTEMPT_TTL_S}, if_absent=True))  # fmt: skip
            expected = nc.version
            nc.delivery_responses = kept(nc.delivery_responses, response)
            nc.version = expected + 1
            self._table.transact([*ops, Put(to_item(nc), if_version=expected)])
            return nc

        def lost() -> NotificationConfiguration | None:
            log.warning(
                "notification %s: the answer was not recorded (the configuration kept changing)", configuration_id
            )
            return None

        return optimistic(step, exhausted=lost)
