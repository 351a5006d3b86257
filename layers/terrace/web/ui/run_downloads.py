"""A run's logs as plain text (terminal codes removed) to read in the browser or download, and its plan JSON to
download. Each reads what the API serves and checks what it checks: the logs as the run page (READ_RUNS, masked
as the log-read URLs), the plan JSON as `/plans/:id/json-output` (READ_PLAN_JSON: the run and its state)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from terrace.domain import errors
from terrace.web.deps import ContainerDep
from terrace.web.ui.ansi import plain
from terrace.web.ui.run_logs import whole_log
from terrace.web.ui.session import SessionDep

router = APIRouter(include_in_schema=False)  # included by web/ui/runs.py under /app
RUN = "/{organization}/workspaces/{name}/runs/{run_id}"


def _attachment(filename: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{filename}"', "X-Content-Type-Options": "nosniff"}


@router.get(RUN + "/logs/{phase}/raw")
def raw_log(
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    run_id: str,
    phase: str,
    download: bool = False,
) -> Response:
    """The phase's log so far as text/plain without terminal codes; `download=1` saves it as a file."""
    if phase not in ("plan", "apply"):
        raise errors.NotFound("log not found")
    _, run = container.run_pages.load(session.principal, organization, name, run_id)
    text = plain(whole_log(container.logs, run, phase).decode("utf-8", errors="replace"))
    headers = _attachment(f"{run.id}-{phase}.log") if download else {"X-Content-Type-Options": "nosniff"}
    return Response(text, media_type="text/plain; charset=utf-8", headers=headers)


@router.get(RUN + "/plan.json")
def plan_json(container: ContainerDep, session: SessionDep, organization: str, name: str, run_id: str) -> Response:
    """The plan JSON, as `/plans/:id/json-output` gives it, as a file."""
    _, run = container.run_pages.load(session.principal, organization, name, run_id)
    body = container.plans.json_output(session.principal, run.plan.id)
    return Response(body, media_type="application/json", headers=_attachment(f"{run.id}-plan.json"))
