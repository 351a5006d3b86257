"""The run list filters clients send (`GET /workspaces/:id/runs`, `GET /organizations/:org/runs`):
filter[status], filter[status_group], filter[source], filter[operation], filter[workspace_names],
search[user], search[commit], search[basic]. Values are comma-separated; an empty value does not filter."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from terrace.domain import runs as rs
from terrace.domain.runs import Run


def operation(run: Run) -> str:
    """HCP Terraform's run operation names."""
    if run.plan_only:
        return "plan_only"
    if run.save_plan:
        return "save_plan"
    if run.refresh_only:
        return "refresh_only"
    if run.is_destroy:
        return "destroy"
    if run.allow_empty_apply:
        return "empty_apply"
    return "plan_and_apply"


STATUS_GROUPS: dict[str, Callable[[Run], bool]] = {
    "final": lambda run: run.final,
    "non_final": lambda run: not run.final,
    "discardable": lambda run: run.status in rs.DISCARDABLE,
}


def _values(params: Mapping[str, str], key: str) -> set[str]:
    return {v.strip() for v in (params.get(key) or "").split(",") if v.strip()}


def select(runs: list[Run], params: Mapping[str, str], workspace_names: Mapping[str, str] | None = None) -> list[Run]:
    """The runs that match every filter in `params`; `workspace_names` maps workspace ids to names."""
    statuses = _values(params, "filter[status]")
    groups = _values(params, "filter[status_group]")
    sources = _values(params, "filter[source]")
    operations = _values(params, "filter[operation]")
    names = _values(params, "filter[workspace_names]")
    users = _values(params, "search[user]")
    commits = _values(params, "search[commit]")
    basic = (params.get("search[basic]") or "").strip().lower()

    def keep(run: Run) -> bool:
        return (
            (not statuses or run.status in statuses)
            and all(STATUS_GROUPS.get(group, lambda _: False)(run) for group in groups)
            and (not sources or run.source in sources)
            and (not operations or operation(run) in operations)
            and (not names or (workspace_names or {}).get(run.workspace_id) in names)
            and (not users or run.created_by in users)
            and not commits  # runs carry no VCS commit
            and (not basic or basic in run.id.lower() or basic in run.message.lower() or basic in run.created_by)
        )

    return [run for run in runs if keep(run)]
