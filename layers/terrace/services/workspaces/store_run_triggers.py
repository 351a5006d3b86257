"""Storage of run triggers, three rows each: the trigger (`rt-…` / `rt`, listed under gsi1 `<target ws>#run-triggers`
by `created#id`), the source's link to it (`<source ws>#run-triggers-out` / target id: one per source and target,
what makes a duplicate impossible and lists a source's outbound triggers) and the target's count of sources
(`<target ws>#run-trigger-sources` / `count`, versioned: what holds the limit under concurrent creations)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terrace.adapters.table import Delete, Put, Table, WriteOp
from terrace.domain.run_triggers import RunTrigger, is_trigger_id
from terrace.services.optimistic import optimistic

SORT_KEY = "rt"


def _key(trigger_id: str) -> tuple[str, str]:
    return trigger_id, SORT_KEY


def _inbound(workspace_id: str) -> str:
    return f"{workspace_id}#run-triggers"


def _link_key(source_id: str, target_id: str) -> tuple[str, str]:
    return f"{source_id}#run-triggers-out", target_id


def _count_key(target_id: str) -> tuple[str, str]:
    return f"{target_id}#run-trigger-sources", "count"


def to_item(trigger: RunTrigger) -> dict[str, Any]:
    pk, sk = _key(trigger.id)
    return {
        "pk": pk,
        "sk": sk,
        "id": trigger.id,
        "organization": trigger.organization,
        "workspace_id": trigger.workspace_id,
        "sourceable_id": trigger.sourceable_id,
        "created_at": trigger.created_at,
        "gsi1pk": _inbound(trigger.workspace_id),
        "gsi1sk": f"{trigger.created_at}#{trigger.id}",
    }


def from_item(item: dict[str, Any]) -> RunTrigger:
    return RunTrigger(
        id=item["id"],
        organization=item["organization"],
        workspace_id=item["workspace_id"],
        sourceable_id=item["sourceable_id"],
        created_at=item["created_at"],
    )


def _link_item(trigger: RunTrigger) -> dict[str, Any]:
    pk, sk = _link_key(trigger.sourceable_id, trigger.workspace_id)
    return {"pk": pk, "sk": sk, "run_trigger_id": trigger.id, "created_at": trigger.created_at}


@dataclass(frozen=True)
class SourceCount:
    """A target's count of sources as read, and the version its next write is conditional on (None: no row)."""

    count: int
    version: int | None


class RunTriggerStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def find(self, trigger_id: str) -> RunTrigger | None:
        item = self._table.get(*_key(trigger_id)) if is_trigger_id(trigger_id) else None
        return from_item(item) if item else None

    def inbound(self, workspace_id: str) -> list[RunTrigger]:
        """A target's triggers, oldest first."""
        return [from_item(item) for item in self._table.query(_inbound(workspace_id), index="gsi1")]

    def outbound(self, source_id: str) -> list[RunTrigger]:
        """The triggers naming `source_id` as their source, oldest first."""
        links = self._table.query(_link_key(source_id, "")[0])
        items = self._table.batch_get([_key(link["run_trigger_id"]) for link in links])
        return sorted((from_item(item) for item in items), key=lambda t: (t.created_at, t.id))

    def linked(self, source_id: str, target_id: str) -> bool:
        """Whether `source_id` is a source of `target_id` already."""
        return self._table.get(*_link_key(source_id, target_id)) is not None

    def sources(self, target_id: str) -> SourceCount:
        item = self._table.get(*_count_key(target_id))
        return SourceCount(int(item["count"]), int(item["version"])) if item else SourceCount(0, None)

    def add(self, trigger: RunTrigger, sources: SourceCount) -> None:
        """The trigger, its link (refused when the pair exists) and the target's count one up from `sources` (refused
        when it changed): ConditionFailed when either was refused."""
        self._table.transact(
            [
                self._count_write(trigger.workspace_id, sources, sources.count + 1),
                Put(to_item(trigger), if_absent=True),
                Put(_link_item(trigger), if_absent=True),
            ]
        )

    def remove(self, trigger: RunTrigger) -> None:
        """The trigger, its link and one off its target's count (nothing when it is gone already)."""

        def step() -> None:
            if self._table.get(*_key(trigger.id)) is None:
                return  # removed meanwhile
            sources = self.sources(trigger.workspace_id)
            count = sources.count if sources.version is not None else 1  # no row: as if it counted this one
            self._table.transact(
                [
                    self._count_write(trigger.workspace_id, sources, max(0, count - 1)),
                    Delete(*_key(trigger.id)),
                    Delete(*_link_key(trigger.sourceable_id, trigger.workspace_id)),
                ]
            )

        optimistic(step, exhausted="the workspace's run triggers changed concurrently; retry")

    def delete_all_of(self, *, workspace: str) -> None:
        """A deleted workspace's triggers, both ways (as a source and as a target), and its count of sources."""
        for trigger in self.inbound(workspace) + self.outbound(workspace):
            self.remove(trigger)
        self._table.delete(*_count_key(workspace))

    @staticmethod
    def _count_write(target_id: str, current: SourceCount, count: int) -> WriteOp:
        pk, sk = _count_key(target_id)
        version = current.version or 0
        item = {"pk": pk, "sk": sk, "count": count, "version": version + 1}
        return Put(item, if_absent=current.version is None, if_version=current.version)
