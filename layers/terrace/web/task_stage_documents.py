"""Task stages as JSON:API documents (go-tfe `task_stages.go`), and what `include=` adds to them.

`STAGE_INCLUDES` maps an include name to the relationship it fills and the function that renders those related
objects: each feature taking part in task stages adds its own (run tasks: `task_results`; policy evaluations:
`policy_evaluations`), so the stage's routes know none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from terrace.bootstrap import Container
from terrace.domain.principal import Principal
from terrace.domain.task_stages import TS_AWAITING_OVERRIDE, TaskStage
from terrace.web.jsonapi import ref, refs, resource

# the relationships a task stage always shows (empty when nothing of that kind took part)
RELATIONSHIPS = {"task-results": "task-results", "policy-evaluations": "policy-evaluations"}

Render = Callable[[Container, Principal, list[str]], list[dict[str, Any]]]
# include name -> (relationship kind, renderer of the related objects)
STAGE_INCLUDES: dict[str, tuple[str, Render]] = {}
# relationship kind -> the run page's rows of the related objects (each: name, kind, status, enforcement, message,
# messages, url), for a feature whose objects the page shows finer than one row each (policy evaluations: one row
# per policy, named by its set and policy, with its messages)
STAGE_ROWS: dict[str, Render] = {}


def stage(ts: TaskStage, *, can_override: bool) -> dict[str, Any]:
    overridable = ts.status == TS_AWAITING_OVERRIDE
    relationships: dict[str, Any] = {"run": ref("runs", ts.run_id)}
    for kind, type_ in RELATIONSHIPS.items():
        relationships[kind] = refs(type_, ts.ids(kind))
    for kind, ids in ts.results.items():
        relationships.setdefault(kind, refs(kind, ids))
    return resource(
        "task-stages",
        ts.id,
        {
            "stage": ts.stage,
            "status": ts.status,
            "status-timestamps": ts.status_timestamps,
            "created-at": ts.created_at,
            "updated-at": ts.updated_at,
            "permissions": {
                "can-override-policy": can_override,
                "can-override-tasks": False,
                "can-override": can_override,
            },
            "actions": {"is-overridable": overridable},
        },
        relationships,
        links={"self": f"/api/v2/task-stages/{ts.id}"},
    )


def included(
    container: Container, principal: Principal, stages: list[TaskStage], names: set[str]
) -> list[dict[str, Any]]:
    """The related objects of `stages` that `include=` names (unknown names are ignored)."""
    found: list[dict[str, Any]] = []
    for name in sorted(names):
        if name not in STAGE_INCLUDES:
            continue
        kind, render = STAGE_INCLUDES[name]
        ids = [i for s in stages for i in s.ids(kind)]
        if ids:
            found += render(container, principal, ids)
    return found
