"""The policy evaluations' part in a run's task stages (`services/runs/stage_participants.py`): registered by the
composition root, it fills the stage's `policy-evaluations` relationship."""

from __future__ import annotations

from terrace.services.policies.evaluations import PolicyEvaluationService
from terrace.services.runs.stage_participants import StageContext, Verdict


class PolicyStageParticipant:
    kind = "policy-evaluations"

    def __init__(self, evaluations: PolicyEvaluationService) -> None:
        self._evaluations = evaluations

    def prepare(self, context: StageContext) -> list[str]:
        if context.stage != "post_plan":
            return []
        return self._evaluations.prepare(context)

    def begin(self, context: StageContext) -> list[str]:
        if context.stage != "post_plan":  # OPA policies read the plan: HCP evaluates them after it
            return []
        return self._evaluations.begin(context)

    def verdict(self, context: StageContext) -> Verdict:
        return self._evaluations.verdict(context)

    def overridden(self, context: StageContext) -> None:
        self._evaluations.overridden(context)
