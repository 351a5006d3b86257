"""Variable sets, their variables and a workspace's effective variables as TFC API resources (go-tfe's
`variable_set.go`, `variable_set_variable.go`)."""

from __future__ import annotations

from typing import Any

from terrace.domain.varsets import EffectiveVariable, SetVariable, VarsetView
from terrace.web.jsonapi import ref, refs, resource
from terrace.web.run_serializers import variable_attributes


def set_variable(v: SetVariable) -> dict[str, Any]:
    return resource(
        "vars",
        v.id,
        variable_attributes(v),
        {"varset": {**ref("varsets", v.varset_id), "links": {"related": f"/api/v2/varsets/{v.varset_id}"}}},
        links={"self": f"/api/v2/varsets/{v.varset_id}/relationships/vars/{v.id}"},
    )


def varset(view: VarsetView) -> dict[str, Any]:
    vs = view.varset
    org = {"data": {"type": "organizations", "id": view.organization_name}}
    return resource(
        "varsets",
        vs.id,
        {
            "name": vs.name,
            "description": vs.description,
            "global": vs.global_,
            "priority": vs.priority,
            "created-at": vs.created_at,
            "updated-at": vs.updated_at,
            "var-count": len(view.variables),
            "workspace-count": len(vs.workspace_ids),
            "project-count": len(vs.project_ids),
        },
        {
            "organization": org,
            "parent": org,
            "vars": refs("vars", [v.id for v in view.variables]),
            "workspaces": refs("workspaces", list(vs.workspace_ids)),
            "projects": refs("projects", list(vs.project_ids)),
        },
        links={"self": f"/api/v2/varsets/{vs.id}"},
    )


def included(views: list[VarsetView]) -> list[dict[str, Any]]:
    """`include=vars,workspaces,projects`: each related resource once."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for view in views:
        if "vars" in view.included:
            for v in view.variables:
                found[("vars", v.id)] = set_variable(v)
        for ws in view.workspaces:
            found[("workspaces", ws.id)] = resource("workspaces", ws.id, {"name": ws.name},
                                                     links={"self": f"/api/v2/workspaces/{ws.id}"})  # fmt: skip
        for p in view.projects:
            found[("projects", p.id)] = resource("projects", p.id, {"name": p.name},
                                                  links={"self": f"/api/v2/projects/{p.id}"})  # fmt: skip
    return list(found.values())


def effective_variable(v: EffectiveVariable, workspace_id: str) -> dict[str, Any]:
    """GET /workspaces/:id/all-vars: a `vars` resource whose `configurable` is the workspace it reaches (go-tfe
    reads that relationship as a workspace, as HCP answers it); a set's variable also names its `varset`."""
    source = {"data": {"type": v.source.kind, "id": v.source.id},
              "links": {"related": f"/api/v2/{v.source.kind}/{v.source.id}"}}  # fmt: skip
    relationships: dict[str, Any] = {
        "configurable": {
            "data": {"type": "workspaces", "id": workspace_id},
            "links": {"related": f"/api/v2/workspaces/{workspace_id}"},
        }
    }
    if v.source.kind == "varsets":
        relationships["varset"] = source
        self_link = f"/api/v2/varsets/{v.source.id}/relationships/vars/{v.id}"
    else:
        self_link = f"/api/v2/workspaces/{workspace_id}/vars/{v.id}"
    return resource(
        "vars",
        v.id,
        variable_attributes(v),
        relationships,
        links={"self": self_link},
    )
