"""Runs as JSON:API documents: the run resources of a page, worked out once for the whole page
(queue positions, permissions, users, run events), and the related objects `include=` asks for
(plan, apply, created_by, confirmed_by, configuration_version, workspace, cost_estimate, comments,
task_stages, tf_policy_evaluations; unknown names are ignored, as an empty `include=` is)."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from typing import Any

from fastapi import Request

from terrace.bootstrap import Container
from terrace.domain import runs as rs
from terrace.domain.errors import Forbidden, NotFound
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.runs import PhaseState, Run
from terrace.domain.workspace import Workspace
from terrace.web import run_serializers as rser
from terrace.web import serializers, task_stage_documents, tf_policy_documents
from terrace.web.jsonapi import resource


def log_url(container: Container, phase: PhaseState, run: Run | None = None) -> str | None:
    """A phase's signed log-read URL (none before it is queued, unless its run waits in a task stage: clients that
    wait on the next phase's log, terraform's `remote` backend, then wait there). On the log-read origin when one
    is set (`TERRACE_LOG_READ_URL`, on AWS the logs function's URL), else on the public URL."""
    if phase.status == rs.P_PENDING and not (run is not None and run.status in rs.STAGE_WAITING):
        return None
    settings = container.settings
    return (settings.log_read_url or settings.public_url) + container.logs.signed_path(phase.id)


def lists_policy_checks(request: Request) -> bool:
    """Whether a run's OPA evaluations are listed as its `policy-checks` too. terraform's and OpenTofu's `cloud`
    block (`X-Terraform-Integration: cloud`) print them from the run's task stages, then print any policy check
    again; HCP shows OPA only as task stages. Older clients (the `remote` backend, which reads policy checks only)
    and API clients get both."""
    return request.headers.get("x-terraform-integration", "").strip().lower() != "cloud"


TF_POLICY = "tf_policy_evaluations"


def include_names(request: Request) -> set[str]:
    return {name.strip() for name in (request.query_params.get("include") or "").split(",") if name.strip()}


def user_ids(container: Container, usernames: Iterable[str], caller: Principal | None = None) -> dict[str, str]:
    """username -> user id, for the usernames that name a user (one read each: the username claim; none for the
    calling user's own name, which the request holds)."""
    found: dict[str, str] = {}
    if caller is not None and caller.kind == PrincipalKind.USER:
        found[caller.username] = caller.subject_id
    for name in set(usernames) - set(found):
        user_id = container.accounts.user_id_of(name) if name else None
        if user_id is not None:
            found[name] = user_id
    return found


def public_user(container: Container, user_id: str) -> dict[str, Any] | None:
    """A user as another user sees it (no email)."""
    try:
        document = serializers.user(container.accounts.get_user(user_id))
    except NotFound:
        return None
    document["attributes"].pop("email", None)
    return document


def runs(
    container: Container,
    principal: Principal,
    page: list[Run],
    *,
    events: bool = False,
    workspaces: Iterable[Workspace] = (),
    policy_checks: bool = True,
) -> list[dict[str, Any]]:
    """Run resources; `events` lists each run's run events in its relationship (one read per run: single
    runs only; lists link to them). `workspaces` already read are not read again. `policy_checks`: list each
    run's policy checks (`lists_policy_checks`; one read for the page when a run has a post-plan stage)."""
    positions = container.run_queries.queue_positions(page)
    known = {ws.id: ws for ws in workspaces}
    permissions: dict[str, dict[str, bool]] = {}
    for run in page:
        if run.workspace_id not in permissions:
            ws = known.get(run.workspace_id) or container.workspaces.load(run.workspace_id)
            known[ws.id] = ws
            permissions[ws.id] = container.workspaces.permissions(principal, ws)
    users = user_ids(container, [u for r in page for u in (r.created_by, r.confirmed_by or "")], principal)
    checks = container.policy_checks.ids_of(page) if policy_checks else {}
    return [
        rser.run(
            run,
            position=positions[run.id],
            permissions=permissions[run.workspace_id],
            cooloff_s=container.settings.force_cancel_cooloff_s,
            users=users,
            event_ids=container.run_queries.event_ids(principal, run, known[run.workspace_id]) if events else None,
            policy_check_ids=checks.get(run.id, []),
        )
        for run in page
    ]


def included(container: Container, principal: Principal, page: list[Run], names: set[str]) -> list[dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}

    def add(document: dict[str, Any] | None) -> None:
        if document is not None:
            found.setdefault((document["type"], document["id"]), document)

    users = (
        user_ids(container, [u for r in page for u in (r.created_by, r.confirmed_by or "")])
        if names & {"created_by", "confirmed_by"}
        else {}
    )
    for run in page:
        if "plan" in names:
            add(rser.plan(run, log_url(container, run.plan, run)))
        if "apply" in names:
            add(rser.apply(run, log_url(container, run.apply, run)))
        if "cost_estimate" in names and run.cost_estimate is not None:
            add(rser.cost_estimate(run))
        if "created_by" in names and run.created_by in users:
            add(public_user(container, users[run.created_by]))
        if "confirmed_by" in names and (run.confirmed_by or "") in users:
            add(public_user(container, users[run.confirmed_by or ""]))
        if "workspace" in names:
            with suppress(NotFound, Forbidden):
                ws = container.workspaces.get(principal, run.workspace_id)
                add(
                    serializers.workspace(
                        ws,
                        container.workspaces.permissions(principal, ws),
                        container.workspaces.organization_of(ws),
                        container.workspaces.defaults_from(ws),
                        container.workspaces.tool_of(ws),
                    )
                )
        if "configuration_version" in names:
            with suppress(NotFound, Forbidden):
                cv = container.configuration_versions.get(principal, run.configuration_version_id)
                add(rser.configuration_version(cv, None))
        if "comments" in names:
            for comment in container.comments.list(principal, run.id):
                add(comment_document(comment))
        if "task_stages" in names and run.task_stage_ids:
            can = container.stage_progress.can_override(principal, run)
            for stage in container.stage_progress.of_run(run):
                add(task_stage_documents.stage(stage, can_override=can))
        if TF_POLICY in names and run.task_stage_ids:  # one read for the run's evaluations
            for evaluation in container.policy_evaluations.of_run(run.id):
                add(tf_policy_documents.evaluation(evaluation))
    return list(found.values())


def with_tf_policy(names: set[str], runs: list[dict[str, Any]], included: list[dict[str, Any]]) -> None:
    """`include=tf_policy_evaluations` (terraform 1.16): each run names its included evaluations."""
    if TF_POLICY in names:
        tf_policy_documents.link_runs(runs, included)


def comment_document(comment: Any) -> dict[str, Any]:
    return resource(
        "comments",
        comment.id,
        {"body": comment.body},
        {"run-event": {"data": {"type": "run-events", "id": comment.event_id} if comment.event_id else None}},
        links={"self": f"/api/v2/comments/{comment.id}"},
    )
