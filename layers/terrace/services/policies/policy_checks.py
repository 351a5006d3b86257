"""`/runs/:id/policy-checks` for clients older than task stages (terraform's `remote` backend prints them): each
of a run's policy evaluations seen as a policy check, its output a readable report of the outcomes.

A check is done (passed, failed, errored) only once its verdict has reached the run, i.e. the run has left
`post_plan_running`: the `remote` backend reads the check's output (go-tfe's `PolicyChecks.Logs` waits while it is
`pending` or `queued`), then the run, and applies only a run that is confirmable by then. A check whose run ended
before it was evaluated is `unreachable` (the client shows nothing for it).
"""

from __future__ import annotations

from terrace.domain import policy_evaluations as pe
from terrace.domain import runs as rs
from terrace.domain import task_stages as ts
from terrace.domain.errors import NotFound
from terrace.domain.ids import looks_like
from terrace.domain.policy_evaluations import PolicyCheck, PolicyEvaluation, PolicySetOutcome
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.policies.evaluations import PolicyEvaluationService
from terrace.services.runs.run_queries import RunQueries
from terrace.services.workspaces.workspaces import WorkspaceService

# policy evaluation status -> policy check status (go-tfe's PolicyStatus)
STATUS = {
    pe.PENDING: "queued",
    pe.RUNNING: "pending",
    pe.PASSED: "passed",
    pe.FAILED: "soft_failed",
    pe.ERRORED: "errored",
    pe.OVERRIDDEN: "overridden",
}
PREFIX = "polchk-"


def check_id(evaluation_id: str) -> str:
    return PREFIX + evaluation_id.removeprefix("poleval-")


def check_status(evaluation: PolicyEvaluation, run_status: str) -> str:
    """The check's status (go-tfe's PolicyStatus) from its evaluation's and its run's."""
    if evaluation.open:
        return "unreachable" if run_status in rs.FINAL else STATUS[evaluation.status]
    if run_status == rs.POST_PLAN_RUNNING:
        return "pending"  # decided, but not yet on the run: a client reading the run now could not go on
    if evaluation.status == pe.FAILED and not evaluation.overridable:
        return "hard_failed"
    return STATUS.get(evaluation.status, "errored")


class PolicyCheckService:
    def __init__(self, evaluations: PolicyEvaluationService, runs: RunQueries, workspaces: WorkspaceService) -> None:
        self._evaluations, self._runs, self._workspaces = evaluations, runs, workspaces

    def _check(self, principal: Principal, evaluation: PolicyEvaluation, run: Run, ws: Workspace) -> PolicyCheck:
        status = check_status(evaluation, run.status)
        counts = evaluation.result_count
        return PolicyCheck(
            id=check_id(evaluation.id),
            run_id=evaluation.run_id,
            status=status,
            result={
                "result": evaluation.status in (pe.PASSED, pe.OVERRIDDEN),
                "passed": counts["passed"],
                "total-failed": counts["advisory-failed"] + counts["mandatory-failed"] + counts["errored"],
                "hard-failed": 0 if evaluation.overridable else counts["mandatory-failed"] + counts["errored"],
                "soft-failed": counts["mandatory-failed"] if evaluation.overridable else 0,
                "advisory-failed": counts["advisory-failed"],
                "duration": 0,
                "sentinel": None,
            },
            overridable=status == "soft_failed",
            can_override=status == "soft_failed"
            and self._workspaces.can(principal, Action.MANAGE_POLICY_OVERRIDES, ws),
            status_timestamps={
                f"{STATUS.get(k.removesuffix('-at'), k.removesuffix('-at'))}-at": v
                for k, v in evaluation.status_timestamps.items()
            },
            evaluation=evaluation,
        )

    def for_run(self, principal: Principal, run_id: str) -> list[PolicyCheck]:
        run, ws = self._runs.readable(principal, run_id)
        return [self._check(principal, e, run, ws) for e in self._evaluations.of_run(run_id)]

    def ids_of(self, runs: list[Run]) -> dict[str, list[str]]:
        """The policy check ids of runs a checked call of the same request returned (a run document's
        `policy-checks`): one read for the page, none when no run has a post-plan stage."""
        stages = {ts.stage_id(r.id, ts.POST_PLAN): r.id for r in runs}
        wanted = ["poleval-" + s.removeprefix("ts-") for r in runs for s in r.task_stage_ids if s in stages]
        found: dict[str, list[str]] = {r.id: [] for r in runs}
        for evaluation in self._evaluations.by_ids(wanted) if wanted else []:
            if evaluation.run_id in found:
                found[evaluation.run_id].append(check_id(evaluation.id))
        return found

    def get(self, principal: Principal, check_id_: str) -> PolicyCheck:
        missing = NotFound(f"policy check {check_id_} not found")
        evaluation_id = "poleval-" + check_id_.removeprefix(PREFIX)
        run_id = ts.run_of_stage("ts-" + check_id_.removeprefix(PREFIX))
        if not check_id_.startswith(PREFIX) or not looks_like(evaluation_id, "poleval") or run_id is None:
            raise missing
        try:
            run, ws = self._runs.readable(principal, run_id)
        except NotFound as exc:
            raise missing from exc
        found = self._evaluations.by_ids([evaluation_id])
        if not found or found[0].run_id != run.id:
            raise missing
        return self._check(principal, found[0], run, ws)

    def output(self, principal: Principal, check_id_: str) -> str:
        check = self.get(principal, check_id_)
        outcomes = self._evaluations.outcomes(principal, check.evaluation.id)
        return report(check, outcomes)


def report(check: PolicyCheck, outcomes: list[PolicySetOutcome]) -> str:
    """The policy check's log, in the spirit of Sentinel's: one block per policy, its result and messages."""
    lines = [f"OPA policy evaluation: {check.evaluation.status}", ""]
    for outcome in outcomes:
        lines.append(f"Policy set: {outcome.policy_set_name}")
        if outcome.error:
            lines.append(f"  error: {outcome.error}")
        for policy in outcome.outcomes:
            lines.append(f"  {policy['policy_name']} ({policy['enforcement_level']}): {policy['status']}")
            for output in policy.get("output", []):
                for message in output.get("result", []):
                    lines.append(f"    - {message}")
                if output.get("error"):
                    lines.append(f"    error: {output['error']}")
        lines.append("")
    counts = check.evaluation.result_count
    lines.append(
        f"{counts['passed']} passed, {counts['advisory-failed']} advisory failed, "
        f"{counts['mandatory-failed']} mandatory failed, {counts['errored']} errored"
    )
    return "\n".join(lines) + "\n"
