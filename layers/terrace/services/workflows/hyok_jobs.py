"""What an agent working a job of a Hold Your Own Key workspace needs to reach its customer's key
(`POST /api/runner/jobs/:id/hyok-key`, `domain/hyok_jobs.py`): the organization's primary HYOK configuration (the
job must run on an agent of its pool), a fresh workload identity token for it, and the workspace's current state as
its ciphertext's URL and wrapped data key. A state whose customer key version is revoked is refused here (Conflict,
the reason in the run's log); a plain state from before the workspace used HYOK is handed over as it is (the run's
next write encrypts it). The server never unwraps a data key: the agent does, with its own key wrapper."""

from __future__ import annotations

from terrace.domain.errors import Conflict
from terrace.domain.hyok_jobs import EncryptedState, HyokJobKey
from terrace.domain.principal import Principal
from terrace.domain.state_versions import FINALIZED
from terrace.services.hyok.key_test import KeyTester
from terrace.services.hyok.state_keys import HyokStateKeys
from terrace.services.runs.job_uploads import JobUploads
from terrace.services.state.versions import StateVersionService
from terrace.services.workspaces.workspaces import WorkspaceService

STATE_PURPOSE = "state"


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

    def key_for(self, principal: Principal, job_id: str, runner_id: str) -> HyokJobKey:
        run = self._jobs.running_job(principal, job_id, runner_id)
        ws = self._workspaces.load(run.workspace_id)
        if ws.extra.get("hyok-enabled") is not True:
            raise Conflict(f"workspace {ws.name} does not use Hold Your Own Key")
        hyok = self._keys.primary(ws.organization)
        if run.agent_pool_id != hyok.agent_pool_id:
            raise Conflict(
                f"workspace {ws.name} uses Hold Your Own Key: its runs go only to agents of the agent pool of HYOK "
                f"configuration {hyok.name}"
            )
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
        )
