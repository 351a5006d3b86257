"""What an agent working a job of a Hold Your Own Key workspace needs to reach its customer's key
(`POST /api/runner/jobs/:id/hyok-key`, `domain/hyok_jobs.py`): the organization's primary HYOK configuration (the
job must run on an agent of its pool), a fresh workload identity token for it, and the workspace's current state as
its ciphertext's URL and wrapped data key. A state whose customer key version is revoked is refused here (Conflict,
the reason in the run's log); a plain state from before the workspace used HYOK is handed over as it is (the run's
next write encrypts it). A planning agent records its sealed plan's wrapped data key (`record_plan_key`), and an
apply gets it back only while its customer key version is not revoked (Conflict otherwise: a revoked key stops
the plan from being applied, not only a key the key service destroyed). The server never unwraps a data key: the
agent does, with its own key wrapper."""

from __future__ import annotations

from terrace.domain.errors import Conflict, Invalid
from terrace.domain.hyok_jobs import EncryptedState, HyokJobKey, HyokPlanKeyRequest, SealedPlanKey
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.domain.state_versions import FINALIZED
from terrace.domain.workspace import Workspace
from terrace.services.hyok.key_test import KeyTester
from terrace.services.hyok.state_keys import HyokStateKeys
from terrace.services.runs.job_uploads import JobUploads
from terrace.services.state.versions import StateVersionService
from terrace.services.workspaces.workspaces import WorkspaceService

STATE_PURPOSE, PLAN_PURPOSE = "state", "plan"


class HyokJobs:
    def __init__(
        self,
        jobs: JobUploads,
        workspaces: WorkspaceService,
        state_versions: StateVersionService,
        keys: HyokStateKeys,
        tester: KeyTester,
    ) -> None:
        self._jobs, self._workspaces, self._state, self._keys, self._tester = (
            jobs,
            workspaces,
            state_versions,
            keys,
            tester,
        )

    def _hyok_job(self, principal: Principal, job_id: str, runner_id: str) -> tuple[Run, Workspace]:
        run = self._jobs.running_job(principal, job_id, runner_id)
        ws = self._workspaces.load(run.workspace_id)
        if ws.extra.get("hyok-enabled") is not True:
            raise Conflict(f"workspace {ws.name} does not use Hold Your Own Key")
        return run, ws

    def key_for(self, principal: Principal, job_id: str, runner_id: str) -> HyokJobKey:
        run, ws = self._hyok_job(principal, job_id, runner_id)
        hyok = self._keys.primary(ws.organization)
        if run.agent_pool_id != hyok.agent_pool_id:
            raise Conflict(
                f"workspace {ws.name} uses Hold Your Own Key: its runs go only to agents of the agent pool of HYOK "
                f"configuration {hyok.name}"
            )
        plan = self._sealed_plan(run) if job_id.startswith("apply-") else None
        key = self._tester.customer_key(hyok)
        state = None
        sv = self._state.current_or_none(ws)
        if sv is not None and sv.status == FINALIZED:
            url = self._state.state_url(sv)  # Conflict when its key version is revoked
            data_key = self._keys.wrapped(sv.hyok_data_key_id) if sv.hyok_data_key_id else None
            state = EncryptedState(
                state_version_id=sv.id,
                download_url=url,
                encrypted_dek=data_key.encrypted_dek if data_key else "",
                context=data_key.context if data_key else {},
                serial=sv.serial,
                lineage=sv.lineage,
            )
        return HyokJobKey(
            hyok_configuration_id=hyok.id,
            kek_id=key.kek_id,
            oidc_kind=key.oidc_kind,
            kms_options=key.kms_options,
            oidc=key.oidc,
            web_identity_token=key.web_identity_token,
            context={"workspace": ws.id, "purpose": STATE_PURPOSE},
            state=state,
            plan=plan,
        )

    def _sealed_plan(self, run: Run) -> SealedPlanKey:
        """The data key an apply opens its sealed plan with; Conflict when it was not recorded or its customer key
        version is revoked."""
        if not run.plan.hyok_data_key_id:
            raise Conflict(
                f"the saved plan of run {run.id} has no recorded data key: it is not applied (start a new run)"
            )
        data_key = self._keys.wrapped(run.plan.hyok_data_key_id, "plan")
        return SealedPlanKey(data_key_id=data_key.id, encrypted_dek=data_key.encrypted_dek, context=data_key.context)

    def record_plan_key(self, principal: Principal, job_id: str, request: HyokPlanKeyRequest) -> SealedPlanKey:
        """A planning agent's sealed plan's wrapped data key, recorded on the plan (`hyok-encrypted-data-key`) in
        one transaction with the key's records; Invalid when its context names another run or purpose."""
        run, ws = self._hyok_job(principal, job_id, request.runner_id)
        expected = {"workspace": ws.id, "purpose": PLAN_PURPOSE, "run": run.id}
        if request.context != expected:
            raise Invalid(f"a sealed plan's data key of run {run.id} is wrapped with the context {expected}")
        data_key_id, writes = self._keys.record(
            ws.organization, ws.id, request.encrypted_dek, request.key_version, request.context
        )
        writes += self._keys.replaced(run.plan.hyok_data_key_id)  # an earlier attempt's seal
        self._jobs.record_sealed_plan(principal, job_id, request.runner_id, data_key_id, writes)
        return SealedPlanKey(data_key_id=data_key_id)
