"""`/runs/:id/policy-checks` for clients older than task stages (terraform's `remote` backend prints them): each
of a run's policy evaluations seen as a policy check, its output a readable report of the outcomes."""

from __future__ import annotations

from terrace.domain import policy_evaluations as pe
from terrace.domain.errors import NotFound
from terrace.domain.ids import looks_like
from terrace.domain.policy_evaluations import PolicyCheck, PolicyEvaluation, PolicySetOutcome
from terrace.domain.principal import Principal
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


class PolicyCheckService:
    def __init__(self, evaluations: PolicyEvaluationService, runs: RunQueries, workspaces: WorkspaceService) -> None:
        self._evaluations, self._runs, self._workspaces = evaluations, runs, workspaces

    def _check(self, principal: Principal, evaluation: PolicyEvaluation) -> PolicyCheck:
        ws = self._workspaces.load(evaluation.workspace_id)
        failed = evaluation.status == pe.FAILED
        status = STATUS.get(evaluation.status, "errored")
        if failed and not evaluation.overridable:
            status = "hard_failed"
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
            overridable=failed and evaluation.overridable,
            can_override=failed
            and evaluation.overridable
            and self._workspaces.can(principal, Action.MANAGE_POLICY_OVERRIDES, ws),
            status_timestamps={
                f"{STATUS.get(k.removesuffix('-at'), k.removesuffix('-at'))}-at": v
                for k, v in evaluation.status_timestamps.items()
            },
            evaluation=evaluation,
        )

    def for_run(self, principal: Principal, run_id: str) -> list[PolicyCheck]:
        self._runs.readable(principal, run_id)
        return [self._check(principal, e) for e in self._evaluations.of_run(run_id)]

    def get(self, principal: Principal, check_id_: str) -> PolicyCheck:
        evaluation_id = "poleval-" + check_id_.removeprefix(PREFIX)
        if not check_id_.startswith(PREFIX) or not looks_like(evaluation_id, "poleval"):
            raise NotFound(f"policy check {check_id_} not found")
        try:
            evaluation = self._evaluations.get(principal, evaluation_id)
        except NotFound as exc:
            raise NotFound(f"policy check {check_id_} not found") from exc
        return self._check(principal, evaluation)

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
