"""Run triggers (HCP Terraform's `run-triggers`): a workspace (the target, `workspace_id`) names a source
workspace (`sourceable_id`) of its organization; a successful apply in the source queues a run in the target.

Stored as three rows (`services/workspaces/store_run_triggers.py`): the trigger, the source's link to it (no
duplicate) and the target's count of sources (what holds the limit of `MAX_SOURCES` under concurrent creations)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from terrace.domain.ids import looks_like
from terrace.domain.workspace import Workspace

MAX_SOURCES = 20  # HCP Terraform's limit of source workspaces per workspace
RUN_SOURCE = "tfe-run-trigger"  # a triggered run's `source`, as HCP Terraform names it
INBOUND, OUTBOUND = "inbound", "outbound"
_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


@dataclass(frozen=True)
class RunTrigger:
    id: str
    organization: str
    workspace_id: str  # the target: where runs are queued
    sourceable_id: str  # the source workspace whose applies queue them
    created_at: str


@dataclass(frozen=True)
class RunTriggerView:
    """A trigger with both its workspaces (their names are the API's `workspace-name`, `sourceable-name`)."""

    trigger: RunTrigger
    workspace: Workspace
    sourceable: Workspace


@dataclass(frozen=True)
class SourcesPanel:
    """The UI's run triggers of a workspace: its sources, the workspaces the caller may add, whether they may."""

    sources: list[RunTriggerView]
    candidates: list[Workspace]
    can_manage: bool


def is_trigger_id(value: str) -> bool:
    return looks_like(value, "rt")


def triggered_run_id(source_run_id: str, target_workspace_id: str) -> str:
    """The id of the run a source run's apply queues in a target workspace: derived from both, so a second
    delivery of the same `applied` event writes the same run id and its conditional write refuses it."""
    digest = int.from_bytes(hashlib.sha256(f"{source_run_id}>{target_workspace_id}".encode()).digest(), "big")
    chars = []
    for _ in range(16):
        digest, index = divmod(digest, len(_ALPHABET))
        chars.append(_ALPHABET[index])
    return "run-" + "".join(chars)


@dataclass(frozen=True)
class Origin:
    """What queued a triggered run: recorded on the run (`Run.trigger`), shown by the UI and its run events."""

    run_trigger_id: str
    source_run_id: str
    source_workspace_id: str
    source_workspace_name: str
    chain: tuple[str, ...]  # the workspaces whose applies led here, first to last (the source included)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_trigger_id": self.run_trigger_id,
            "source_run_id": self.source_run_id,
            "source_workspace_id": self.source_workspace_id,
            "source_workspace_name": self.source_workspace_name,
            "chain": list(self.chain),
        }


def chain_of(trigger: dict[str, Any] | None) -> tuple[str, ...]:
    """The workspaces that led to a run (empty for a run nobody's apply queued)."""
    chain = (trigger or {}).get("chain") or []
    return tuple(str(ws) for ws in chain)
