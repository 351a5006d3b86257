"""Terraform actions (terraform 1.14+) as HCP Terraform's actions read API shows them: the actions a workspace's
configuration declares, and per run the invocations its plan planned and what became of them.

The runner reads both from the JSON plan it already parsed (`declared`: `configuration`'s `actions`, root module
and module calls; `planned`: `action_invocations`, counted per action and invocation method) and reports them in
its finish report, bounded; the API keeps them on the run. Nothing here reads storage. An action's id names its
workspace and a hash of its address (`action-<workspace suffix><hash>`): the same action keeps its id from run to
run, and a read finds its workspace without an index.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from terrace.domain.runs import Run, suffix

PREFIX = "action"
ROOT_MODULE = "system:root_module"
# what one finish report (and so one run item) records: a configuration declaring more lists the first ones
MAX_ACTIONS = 64
ADDRESS_MAX = 256
TEXT_BUDGET = 16 * 1024  # the addresses of each list together
_HASH_CHARS = 12


class DeclaredAction(BaseModel):
    address: str = Field(max_length=ADDRESS_MAX)  # `action.<type>.<name>`, `module.m.action.<type>.<name>`
    module_address: str = Field(default=ROOT_MODULE, max_length=ADDRESS_MAX)
    provider: str = Field(default="", max_length=128)
    instance_type: Literal["single", "count", "for_each"] = "single"


class PlannedInvocations(BaseModel):
    address: str = Field(max_length=ADDRESS_MAX)  # the action's (not an instance's: `[key]` is cut off)
    direct: int = Field(default=0, ge=0, le=10**6)  # `-invoke` (`invoke_action_trigger`)
    lifecycle: int = Field(default=0, ge=0, le=10**6)  # a resource's `action_trigger`


# reading a JSON plan (the runner) -----------------------------------------------------------------------------
def _module_actions(module: dict[str, Any], prefix: str, depth: int = 0) -> list[DeclaredAction]:
    found: list[DeclaredAction] = []
    for action in module.get("actions") or []:
        if not isinstance(action, dict) or not isinstance(action.get("address"), str):
            continue
        key = str(action.get("provider_config_key") or "")
        found.append(
            DeclaredAction(
                address=(prefix + action["address"])[:ADDRESS_MAX],
                module_address=(prefix.rstrip(".") or ROOT_MODULE)[:ADDRESS_MAX],
                provider=key.split(".")[0].split(":")[-1][:128],
                instance_type="count" if action.get("count_expression") else
                "for_each" if action.get("for_each_expression") else "single",
            )
        )  # fmt: skip
    calls = module.get("module_calls") or {}
    if depth < 32 and isinstance(calls, dict):
        for name, call in calls.items():
            child = call.get("module") if isinstance(call, dict) else None
            if isinstance(child, dict):
                found += _module_actions(child, f"{prefix}module.{name}.", depth + 1)
    return found


def declared(plan_json: Any) -> list[DeclaredAction]:
    """The actions the configuration declares (at most MAX_ACTIONS)."""
    config = plan_json.get("configuration") if isinstance(plan_json, dict) else None
    root = config.get("root_module") if isinstance(config, dict) else None
    return _bounded(_module_actions(root, "")) if isinstance(root, dict) else []


def _bounded(actions: list[DeclaredAction]) -> list[DeclaredAction]:
    kept, used = [], 0
    for action in actions[:MAX_ACTIONS]:
        used += len(action.address) + len(action.module_address)
        if used > TEXT_BUDGET:
            break
        kept.append(action)
    return kept


def action_of(instance: str) -> str:
    """`action.t.n["k"]` / `action.t.n[0]` -> `action.t.n` (module instance keys stay)."""
    return instance[: instance.rindex("[")] if instance.endswith("]") and "[" in instance else instance


def planned(plan_json: Any) -> list[PlannedInvocations]:
    """The invocations the plan planned, counted per action and method (at most MAX_ACTIONS actions)."""
    counts: dict[str, PlannedInvocations] = {}
    used = 0
    invocations = plan_json.get("action_invocations") if isinstance(plan_json, dict) else None
    for invocation in invocations or []:
        if not isinstance(invocation, dict) or not isinstance(invocation.get("address"), str):
            continue
        address = action_of(invocation["address"])[:ADDRESS_MAX]
        if address not in counts and (len(counts) >= MAX_ACTIONS or used + len(address) > TEXT_BUDGET):
            continue
        used += 0 if address in counts else len(address)
        entry = counts.setdefault(address, PlannedInvocations(address=address))
        if invocation.get("invoke_action_trigger") is not None:
            entry.direct += 1
        else:
            entry.lifecycle += 1
    return list(counts.values())


# the API's view ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ActionView:
    id: str
    workspace_id: str
    declared: DeclaredAction
    created_at: str  # the oldest run that declared it
    updated_at: str  # the newest
    last_invocation: tuple[str, str] | None  # (invocation id, run id) of the newest run that planned one
    invocation_count: int  # invocations that ran (succeeded or failed)


@dataclass(frozen=True)
class RunSummary:
    action_id: str
    run: Run
    planned: PlannedInvocations

    @property
    def method(self) -> str:
        return "direct" if self.planned.direct else "lifecycle"

    @property
    def count(self) -> int:
        return self.planned.direct + self.planned.lifecycle


def action_id(workspace_id: str, address: str) -> str:
    digest = base64.b32encode(hashlib.sha256(address.encode()).digest()).decode().lower()
    return f"{PREFIX}-{suffix(workspace_id)}{digest[:_HASH_CHARS]}"


def workspace_of(action_id: str) -> str | None:
    """The workspace an action id names (None: not an action id)."""
    prefix, _, tail = action_id.partition("-")
    if prefix != PREFIX or len(tail) <= _HASH_CHARS:
        return None
    return f"ws-{tail[:-_HASH_CHARS]}"


def invocation_id(action_id: str, run_id: str) -> str:
    """The id of an action's invocations in a run (HCP's `action-invocations`, one per run here)."""
    digest = base64.b32encode(hashlib.sha256(f"{action_id}:{run_id}".encode()).digest()).decode().lower()
    return f"ai-{digest[:16]}"


def aggregate_status(run: Run) -> str:
    """What became of a run's planned invocations: HCP's `aggregate-invocation-status`."""
    if not run.final:
        return "run_in_progress"
    if run.status == "applied":
        return "successful"
    return "not_successful" if run.apply.apply_started_at else "not_invoked"


def invocation_statuses(run: Run, count: int) -> dict[str, int]:
    status = aggregate_status(run)
    return {"successful": count if status == "successful" else 0, "failed": count if status == "not_successful" else 0}


def invoked_at(run: Run) -> str:
    return run.apply.apply_started_at or run.apply.started_at or run.plan.finished_at or run.created_at
