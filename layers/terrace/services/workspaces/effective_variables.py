"""What reaches a workspace's runs: its own variables, those of the variable sets that apply to it and a run's
own (`-var`), after HCP Terraform's precedence (`domain/varsets.py: effective`).

A run resolves them once, when it is created (`resolve_for_run`, called by the run service through the hook the
composition root sets): it records each winning value with its source, a sensitive one only as the ciphertext
it is stored with and its encryption context, so a later change to a set or a variable does not change a run
already queued, and nothing a reader sees holds a secret in clear (`VariableService.recorded` decrypts them for
the runner's job spec only). `GET /workspaces/:id/all-vars` shows the same resolution without run variables.
"""

from __future__ import annotations

from typing import Any

from terrace.domain.principal import Principal
from terrace.domain.varsets import RUN, WORKSPACE, Candidate, EffectiveVariable, Source, effective
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.workspaces import varset_variables
from terrace.services.workspaces.store_variables import stored_fields
from terrace.services.workspaces.variables import VariableService
from terrace.services.workspaces.varset_variables import SetVariableService
from terrace.services.workspaces.varsets import VariableSetService
from terrace.services.workspaces.workspaces import WorkspaceService


class EffectiveVariables:
    def __init__(
        self,
        workspaces: WorkspaceService,
        variables: VariableService,
        varsets: VariableSetService,
        set_variables: SetVariableService,
    ) -> None:
        self._workspaces, self._variables = workspaces, variables
        self._varsets, self._set_variables = varsets, set_variables

    def _candidates(self, ws: Workspace) -> list[Candidate]:
        found = []
        for vs, scope in self._varsets.reaching(ws):
            for item in self._set_variables.items(vs.id):
                source = Source("varsets", vs.id, vs.name, scope, vs.priority)
                found.append(Candidate(item["key"], item["category"], scope, vs.priority, vs.name, (item, source)))
        workspace = Source("workspaces", ws.id, ws.name, WORKSPACE)
        for item in self._variables.items(ws.id):
            found.append(Candidate(item["key"], item["category"], WORKSPACE, payload=(item, workspace)))
        return found

    def all_vars(self, principal: Principal, ws: Workspace) -> list[EffectiveVariable]:
        """GET /workspaces/:id/all-vars: who may read the workspace's variables sees what reaches it and from
        where; sensitive values never."""
        self._workspaces.authorize(principal, Action.READ_VARIABLES, ws)
        return [_effective(*winner.payload) for winner in effective(self._candidates(ws))]

    def resolve_for_run(self, ws: Workspace, run_variables: list[dict[str, str]]) -> list[dict[str, Any]]:
        """The variables a new run records (see the module's docstring)."""
        candidates = self._candidates(ws)
        run = Source("runs", "", "run", RUN)
        candidates += [Candidate(v["key"], "terraform", RUN, payload=(v, run)) for v in run_variables]
        return [self._entry(ws, *winner.payload) for winner in effective(candidates)]

    def _entry(self, ws: Workspace, item: dict[str, Any], source: Source) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "key": item["key"],
            "category": item.get("category", "terraform"),
            "hcl": bool(item.get("hcl", source.kind == "runs")),  # a run variable is an HCL expression
            "sensitive": bool(item.get("sensitive", False)),
            "source": {
                "type": source.kind,
                "id": source.id,
                "name": source.name,
                "scope": source.scope,
                "priority": source.priority,
            },
        }
        if entry["sensitive"]:
            context = (
                varset_variables.context(source.id, item["id"])
                if source.kind == "varsets"
                else self._variables.context(ws.id, item["id"])
            )
            entry.update(ciphertext=item["ciphertext"], context=context)
        else:
            entry["value"] = item.get("value", "")
        return entry


def _effective(item: dict[str, Any], source: Source) -> EffectiveVariable:
    return EffectiveVariable(source=source, **stored_fields(item))
