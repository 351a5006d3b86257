"""Storage of notification configurations (`nc-…`, listed under `<subscribable>#ncs`) and of the delivery attempts
already recorded (`<nc>#attempts`, kept a week), so a redelivered event records nothing twice."""

from __future__ import annotations

import logging
from typing import Any

from terrace.adapters.table import Put, Table
from terrace.domain import clock
from terrace.domain.errors import NotFound
from terrace.domain.ids import looks_like
from terrace.domain.notifications import NotificationConfiguration, from_item, kept, to_item
from terrace.services.optimistic import optimistic

log = logging.getLogger("terrace.notifications")
SORT_KEY = "nc"
ATTEMPT_TTL_S = 7 * 24 * 3600


def attempt_key(configuration_id: str, delivery_id: str, attempt: int) -> tuple[str, str]:
    return f"{configuration_id}#attempts", f"{delivery_id}#{attempt:02d}"


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
        return [from_item(item) for item in self._table.query(f"{subscribable_id}#ncs", index="gsi1")]

    def create(self, nc: NotificationConfiguration) -> None:
        self._table.put(to_item(nc), if_absent=True)

    def replace(self, nc: NotificationConfiguration, expected_version: int) -> None:
        nc.version = expected_version + 1
        self._table.put(to_item(nc), if_version=expected_version)

    def delete(self, nc: NotificationConfiguration) -> None:
        attempts = self._table.query(f"{nc.id}#attempts")
        if attempts:
            self._table.batch_delete([(a["pk"], a["sk"]) for a in attempts])
        self._table.delete(nc.id, SORT_KEY)

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
