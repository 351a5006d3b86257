"""`include=` on workspace reads and lists: organization, current_run, current_state_version, outputs, project.

Each related object appears once in `included`, serialized as its own endpoint serializes it; what the
caller may not read is left out (the relationship still names it). Unknown names are ignored, and an
empty `include=` (go-tfe sends one on every list) includes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import Request

from terrace.bootstrap import Container
from terrace.domain.errors import Forbidden, NotFound
from terrace.domain.principal import Principal
from terrace.domain.projects import default_project_id
from terrace.domain.workspace import Workspace
from terrace.web import access_serializers, resource_documents, serializers

SUPPORTED = ("organization", "current_run", "current_state_version", "outputs", "project")


def requested(request: Request) -> set[str]:
    raw = request.query_params.get("include") or ""
    return {name.strip().replace("-", "_") for name in raw.split(",") if name.strip()} & set(SUPPORTED)


def included(
    container: Container, principal: Principal, workspaces: list[Workspace], data: list[dict[str, Any]], names: set[str]
) -> list[dict[str, Any]]:
    """The `included` resources for `workspaces` (serialized as `data`, whose `outputs` relationship is filled
    in when outputs are asked for)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}

    def add(resource: dict[str, Any]) -> None:
        found.setdefault((resource["type"], resource["id"]), resource)

    for ws, resource in zip(workspaces, data, strict=True):
        if "organization" in names:
            add(_organization(container, principal, ws))
        if "project" in names:
            project = container.projects.load(ws.project_id or default_project_id(ws.organization))
            add(access_serializers.project(project, container.organizations.by_key(project.organization)))
        if "current_run" in names and ws.current_run_id:
            for run in _readable(_run, container, principal, ws.current_run_id):
                add(run)
        if "current_state_version" in names and ws.current_state_version_id:
            for sv in _readable(_state_version, container, principal, ws.current_state_version_id):
                add(sv)
        if "outputs" in names and ws.current_state_version_id:
            outputs = [o for found_outputs in _readable(_outputs, container, principal, ws) for o in found_outputs]
            resource["relationships"]["outputs"] = {"data": [{"type": o["type"], "id": o["id"]} for o in outputs]}
            for output in outputs:
                add(output)
    return list(found.values())


def by_current_run_created_at(
    container: Container, principal: Principal, workspaces: list[Workspace], newest_first: bool
) -> list[Workspace]:
    """`sort=current-run.created-at` (`-` newest first): workspaces without a current run the caller may read come
    last either way (go-tfe reads the first ones' current runs)."""
    created: dict[str, str] = {}
    for ws in workspaces:
        for run in _readable(container.runs.get, principal, ws.current_run_id) if ws.current_run_id else []:
            created[ws.id] = run.created_at
    with_run = sorted((ws for ws in workspaces if ws.id in created), key=lambda ws: (created[ws.id], ws.id),
                      reverse=newest_first)  # fmt: skip
    return with_run + [ws for ws in workspaces if ws.id not in created]


def _readable(read: Callable[..., Any], *args: Any) -> list[Any]:
    """[what `read` returns], or [] when the caller may not see it (or it is gone meanwhile)."""
    try:
        return [read(*args)]
    except (NotFound, Forbidden):
        return []


def _organization(container: Container, principal: Principal, ws: Workspace) -> dict[str, Any]:
    return resource_documents.organization(container, principal, container.workspaces.organization_of(ws))


def _run(container: Container, principal: Principal, run_id: str) -> dict[str, Any]:
    from terrace.web import run_documents

    return run_documents.runs(container, principal, [container.runs.get(principal, run_id)])[0]


def _state_version(container: Container, principal: Principal, sv_id: str) -> dict[str, Any]:
    return resource_documents.state_version(container, container.state_versions.get(principal, sv_id))


def _outputs(container: Container, principal: Principal, ws: Workspace) -> list[dict[str, Any]]:
    return [serializers.workspace_output(out) for out in container.state_versions.current_outputs(principal, ws.id)]
