"""/api/v2 no-code modules (go-tfe's `registry_no_code_module.go`): a private registry module's no-code designation,
its version pin and variable options (`services/registry/no_code_modules.py`), and the workspaces provisioned from
one and their upgrades (`services/workflows/no_code_provisioning.py`)."""

from __future__ import annotations

import hashlib
from typing import Any

from fastapi import APIRouter, Response

from terrace.bootstrap import Container
from terrace.domain.errors import Invalid
from terrace.domain.no_code_modules import NoCodeModule
from terrace.domain.registry_modules import RegistryModule
from terrace.domain.runs import Run
from terrace.domain.workspace import Workspace
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, attributes, read_document, resource, respond
from terrace.web.routers.workspaces import serialize as serialize_workspace

router = APIRouter(prefix="/api/v2")
TYPE = "no-code-modules"


def serialize(ncm: NoCodeModule, module: RegistryModule) -> dict[str, Any]:
    options = [{"type": "variable-options", "id": o.id} for o in ncm.variable_options]
    return resource(
        TYPE,
        ncm.id,
        {
            "enabled": ncm.enabled,
            "version-pin": ncm.version_pin,
            "created-at": ncm.created_at,
            "updated-at": ncm.updated_at,
        },  # fmt: skip
        relationships={
            "organization": {"data": {"type": "organizations", "id": module.organization_name}},
            "registry-module": {"data": {"type": "registry-modules", "id": module.id}},
            "variable-options": {"data": options},
        },
        links={"self": f"/api/v2/no-code-modules/{ncm.id}"},
    )


def variable_options(ncm: NoCodeModule) -> list[dict[str, Any]]:
    """The `included` documents of a no-code module's variable options."""
    return [
        resource(
            "variable-options",
            o.id,
            {"variable-name": o.variable_name, "variable-type": o.variable_type, "options": list(o.options)},
        )  # fmt: skip
        for o in ncm.variable_options
    ]


def _document(ncm: NoCodeModule, module: RegistryModule, status: int = 200) -> JSONAPIResponse:
    return respond(serialize(ncm, module), status, included=variable_options(ncm))


def _related_id(data: dict[str, Any], relation: str) -> Any:
    rel = (data.get("relationships") or {}).get(relation)
    target = rel.get("data") if isinstance(rel, dict) else None
    return target.get("id") if isinstance(target, dict) else None


def _options(body: Any, data: dict[str, Any]) -> list[Any] | None:
    """The variable options a request sends (None: none sent): each a relationship member with its attributes, or
    one named there whose attributes are in `included`."""
    rel = (data.get("relationships") or {}).get("variable-options")
    if rel is None:
        return None
    members = rel.get("data") if isinstance(rel, dict) else None
    if not isinstance(members, list):
        raise Invalid("variable-options must be {data: [...]}", pointer="/data/relationships/variable-options")
    included = body.get("included") if isinstance(body, dict) else None
    extra = {(i.get("type"), i.get("id")): i for i in included or [] if isinstance(i, dict)}
    found: list[Any] = []
    for member in members:
        if not isinstance(member, dict):
            raise Invalid("each variable option must be an object", pointer="/data/relationships/variable-options")
        attrs = member.get("attributes") or extra.get((member.get("type"), member.get("id")), {}).get("attributes")
        found.append(attrs)
    return found


@router.post("/organizations/{org}/no-code-modules")
def create_no_code_module(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Any:
    data = read_document(body, TYPE)
    module_id, options = _related_id(data, "registry-module"), _options(body, data)
    ncm, module = container.no_code_modules.create(principal, org, module_id, attributes(data), options)
    return _document(ncm, module, 201)


@router.get("/no-code-modules/{no_code_id}")
def read_no_code_module(no_code_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return _document(*container.no_code_modules.get(principal, no_code_id))


@router.patch("/no-code-modules/{no_code_id}")
def update_no_code_module(
    no_code_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, TYPE)
    return _document(*container.no_code_modules.update(principal, no_code_id, attributes(data), _options(body, data)))


@router.delete("/no-code-modules/{no_code_id}")
def delete_no_code_module(no_code_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.no_code_modules.delete(principal, no_code_id)
    return Response(status_code=204)


def _workspace_document(body: Any) -> dict[str, Any]:
    """A provisioning request's `data` (go-tfe sends `no-code-module-workspace`, HCP's documents `workspaces`)."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict) or data.get("type") not in ("workspaces", "no-code-module-workspace"):
        raise Invalid("data must be a workspaces document", pointer="/data")
    return data


def _vars(data: dict[str, Any]) -> Any:
    rel = (data.get("relationships") or {}).get("vars")
    if rel is not None and not isinstance(rel, dict):
        raise Invalid("vars must be {data: [...]}", pointer="/data/relationships/vars")
    return rel.get("data") if rel else None


def _project(data: dict[str, Any]) -> str | None:
    """The project named (`relationships.project`, of type `projects`, or `project` as HCP's documents spell it)."""
    rel = (data.get("relationships") or {}).get("project")
    target = rel.get("data") if isinstance(rel, dict) else rel
    if target is None:
        return None
    if not isinstance(target, dict) or not isinstance(target.get("id"), str) or target.get("type") not in (
        "projects", "project", None):  # fmt: skip
        raise Invalid("project must be {data: {type: projects, id}}", pointer="/data/relationships/project")
    return str(target["id"])


@router.get("/no-code-modules/{no_code_id}/versions/{version}/module-variables")
def read_no_code_module_variables(
    no_code_id: str, version: str, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    found = container.no_code_provisioning.module_variables(principal, no_code_id, version)
    return respond(
        [
            resource(
                "registry-module-variables",
                "rmvar-" + hashlib.sha256(f"{no_code_id}/{version}/{v['name']}".encode()).hexdigest()[:16],
                {
                    "name": v["name"],
                    "type": v.get("type", "any"),
                    "description": v.get("description", ""),
                    "required": bool(v.get("required")),
                    "sensitive": bool(v.get("sensitive")),
                    "options": v["options"],
                    "has-global": False,
                },  # fmt: skip
            )
            for v in found
        ]
    )


@router.post("/no-code-modules/{no_code_id}/workspaces")
def create_no_code_workspace(
    no_code_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = _workspace_document(body)
    ws = container.no_code_provisioning.create_workspace(
        principal, no_code_id, attributes(data), _project(data), _vars(data)
    )
    return respond(serialize_workspace(container, principal, ws))  # HCP answers 200


def _upgrade(container: Container, run: Run, ws: Workspace, org_name: str) -> JSONAPIResponse:
    """HCP's `workspace-upgrade`: the upgrade's run, its status and where its plan is shown."""
    plan_url = f"{container.settings.public_url.rstrip('/')}/app/{org_name}/workspaces/{ws.name}/runs/{run.id}"
    return respond(
        resource(
            "workspace-upgrade",
            run.id,
            {"status": run.status, "plan-url": plan_url, "message": f"Upgrading to {ws.extra.get('no-code-version')}"},
            relationships={"workspace": {"data": {"type": "workspaces", "id": ws.id}}},
        )
    )


@router.post("/no-code-modules/{no_code_id}/workspaces/{workspace_id}/upgrade")
def upgrade_no_code_workspace(
    no_code_id: str, workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = _workspace_document(body) if isinstance(body, dict) and body.get("data") is not None else {}
    return _upgrade(
        container, *container.no_code_provisioning.upgrade(principal, no_code_id, workspace_id, _vars(data))
    )


@router.get("/no-code-modules/{no_code_id}/workspaces/{workspace_id}/upgrade/{run_id}")
def read_no_code_workspace_upgrade(
    no_code_id: str, workspace_id: str, run_id: str, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    found = container.no_code_provisioning.upgrade_run(principal, no_code_id, workspace_id, run_id)
    return _upgrade(container, *found)


@router.post("/no-code-modules/{no_code_id}/workspaces/{workspace_id}/upgrade/{run_id}")
def confirm_no_code_workspace_upgrade(
    no_code_id: str, workspace_id: str, run_id: str, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    found = container.no_code_provisioning.upgrade_run(principal, no_code_id, workspace_id, run_id, confirm=True)
    return _upgrade(container, *found)
