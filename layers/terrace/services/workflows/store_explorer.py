"""The explorer's own items: one per workspace under its organization (`explorer#<org>` / `<workspace id>`),
holding the `Summary` the explorer feed recorded (`domain/explorer.py`): a `state` part (the current state's
terraform version and providers) and a `configuration` part (the last applied configuration's modules and
providers). Each part is written by a conditional read-modify-write, so the two never erase each other; an
organization's summaries are read in one query."""

from __future__ import annotations

from typing import Any

from terrace.adapters.table import Table
from terrace.domain.explorer import Summary, Use
from terrace.services.optimistic import optimistic


def explorer_pk(org_key: str) -> str:
    return f"explorer#{org_key}"


def _uses(raw: Any) -> tuple[Use, ...]:
    """Stored uses; one recorded before constraints were kept has its version as its constraint (a provider's
    version then was its constraint, or the lock file's choice: never taken for unpinned)."""
    listed = raw if isinstance(raw, list) else []
    return tuple(
        Use(
            str(u.get("name", "")),
            str(u.get("source", "")),
            str(u.get("version", "")),
            str(u.get("constraint", u.get("version", ""))),
        )  # fmt: skip
        for u in listed
        if isinstance(u, dict)
    )


def summary_from_item(item: dict[str, Any]) -> Summary:
    state, config = item.get("state") or {}, item.get("configuration") or {}
    return Summary(
        state_version_id=str(state.get("state_version_id", "")),
        state_terraform_version=str(state.get("terraform_version", "")),
        state_providers=tuple(str(p) for p in state.get("providers") or []),
        configuration_version_id=str(config.get("configuration_version_id", "")),
        modules=_uses(config.get("modules")),
        providers=_uses(config.get("providers")),
    )


def _use_items(uses: tuple[Use, ...]) -> list[dict[str, str]]:
    return [{"name": u.name, "source": u.source, "version": u.version, "constraint": u.constraint} for u in uses]


class ExplorerStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def summaries(self, org_key: str) -> dict[str, Summary]:
        """workspace id -> its summary, for every workspace of the organization the feed recorded."""
        return {str(item["sk"]): summary_from_item(item) for item in self._table.query(explorer_pk(org_key))}

    def summary(self, org_key: str, workspace_id: str) -> Summary | None:
        item = self._table.get(explorer_pk(org_key), workspace_id)
        return summary_from_item(item) if item else None

    def record_state(
        self, org_key: str, workspace_id: str, state_version_id: str, terraform_version: str, providers: list[str]
    ) -> None:
        part = {"state_version_id": state_version_id, "terraform_version": terraform_version,
                "providers": sorted(set(providers))[:200]}  # fmt: skip
        self._write(org_key, workspace_id, "state", part)

    def record_configuration(
        self, org_key: str, workspace_id: str, cv_id: str, modules: tuple[Use, ...], providers: tuple[Use, ...]
    ) -> None:
        part = {"configuration_version_id": cv_id, "modules": _use_items(modules), "providers": _use_items(providers)}
        self._write(org_key, workspace_id, "configuration", part)

    def _write(self, org_key: str, workspace_id: str, name: str, part: dict[str, Any]) -> None:
        def step() -> None:
            item = self._table.get(explorer_pk(org_key), workspace_id)
            if item is None:
                fresh = {"pk": explorer_pk(org_key), "sk": workspace_id, "version": 1, name: part}
                self._table.put(fresh, if_absent=True)
            else:
                self._table.put({**item, name: part, "version": int(item["version"]) + 1}, if_version=item["version"])

        optimistic(step, exhausted=f"the explorer's summary of {workspace_id} kept changing")

    def delete_all_of(self, *, organization: str, workspace: str | None = None) -> None:
        """A workspace's summary (`workspace`), or every summary of the organization."""
        if workspace is not None:
            self._table.delete(explorer_pk(organization), workspace)
            return
        self._table.batch_delete([(item["pk"], item["sk"]) for item in self._table.query(explorer_pk(organization))])
