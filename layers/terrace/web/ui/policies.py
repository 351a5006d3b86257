"""Policy as code in the UI: an organization's policies and policy sets (create, upload Rego, set enforcement), and
a run's policy evaluations (each policy's result and messages; the stage and its Override button are the run page's,
`web/ui/run_tasks.py`), the same service calls as the API's."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.web.deps import ContainerDep
from terrace.web.ui.session import CheckedFormDep, SessionDep, render

router = APIRouter(prefix="/app", include_in_schema=False)


def _page(request: Request, container: Any, session: Any, organization: str, **extra: Any) -> Any:
    principal = session.principal
    return render(
        request,
        "policies.html",
        session,
        organization=organization,
        policies=container.policies.list(principal, organization),
        policy_sets=container.policy_sets.list(principal, organization),
        **extra,
    )


@router.get("/{organization}/policies")
def policies_page(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    return _page(request, container, session, organization)


@router.get("/{organization}/policy-sets/{set_id}")
def policy_set_page(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, set_id: str
) -> Any:
    """A policy set: its policies, where it applies, its versions and parameters."""
    view = container.policy_pages.policy_set(session.principal, organization, set_id)
    return render(request, "policy_set.html", session, organization=organization, view=view, org_tab="/policies")


@router.get("/{organization}/policies/{policy_id}")
def policy_page(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, policy_id: str
) -> Any:
    """A policy: its code (as text, never run here), its enforcement and the sets it is in."""
    view = container.policy_pages.policy(session.principal, organization, policy_id)
    return render(request, "policy.html", session, organization=organization, view=view, org_tab="/policies")


@router.post("/{organization}/policies")
def create_policy(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    name = form.get("name", "").strip()
    attrs = {
        "name": name,
        "kind": "opa",
        "query": form.get("query", "").strip() or f"data.terraform.policies.{name}.deny",
        "enforcement-level": form.get("enforcement_level", "advisory"),
        "description": form.get("description", ""),
    }
    try:
        container.policies.create_with_content(session.principal, organization, attrs, form.get("rego", ""))
    except errors.Invalid as exc:
        return _page(request, container, session, organization, status=422, error=exc.detail, form=form)
    return RedirectResponse(f"/app/{organization}/policies", status_code=303)


@router.post("/{organization}/policies/{policy_id}")
def change_policy(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, policy_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    """Its enforcement level, and its Rego when some is sent (both checked before either is written)."""
    rego = form.get("rego", "")
    try:
        container.policies.change(
            session.principal, policy_id, form.get("enforcement_level"), rego if rego.strip() else None
        )
    except (errors.Invalid, errors.TooLarge) as exc:
        return _page(request, container, session, organization, status=422, error=exc.detail)
    return RedirectResponse(f"/app/{organization}/policies", status_code=303)


@router.post("/{organization}/policy-sets")
def create_policy_set(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    attrs = {
        "name": form.get("name", "").strip(),
        "kind": "opa",
        "global": form.get("global") == "on",
        "overridable": form.get("overridable") == "on",
        "description": form.get("description", ""),
    }
    chosen = [key.removeprefix("policy-") for key, on in form.items() if key.startswith("policy-") and on]
    members = {"policies": chosen}
    workspace_names = [w.strip() for w in form.get("workspaces", "").split(",") if w.strip()]
    try:
        members["workspaces"] = container.policy_sets.workspace_ids(session.principal, organization, workspace_names)
        container.policy_sets.create(session.principal, organization, attrs, members)
    except (errors.Invalid, errors.NotFound) as exc:
        return _page(request, container, session, organization, status=422, error=exc.detail)
    return RedirectResponse(f"/app/{organization}/policies", status_code=303)


@router.get("/{organization}/workspaces/{name}/runs/{run_id}/policies")
def run_policies(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, run_id: str
) -> Any:
    """The run page's policy stage (loaded, and polled while an evaluation runs, by htmx)."""
    run, stages = container.stage_progress.list_for(session.principal, run_id)
    evaluations: list[dict[str, Any]] = []
    for stage in stages:
        for evaluation_id in stage.ids("policy-evaluations"):
            evaluation = container.policy_evaluations.get(session.principal, evaluation_id)
            outcomes = container.policy_evaluations.outcomes(session.principal, evaluation_id)
            evaluations.append({"stage": stage, "evaluation": evaluation, "outcomes": outcomes})
    return render(
        request,
        "run_policies.html",
        session,
        organization=organization,
        ws_name=name,
        run=run,
        evaluations=evaluations,
    )
