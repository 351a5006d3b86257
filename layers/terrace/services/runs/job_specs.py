"""What a runner gets with the job it claimed (`JobSpec`): the run's operation and tool version, the variables the
run recorded when it was created (its workspace's, its variable sets' and its own, after precedence:
`services/workspaces/effective_variables.py`; sensitive ones decrypted only here), presigned URLs for the
configuration and the plan files (valid for the phase's deadline; the plan's upload URLs create their objects once:
`If-None-Match: *` signed in on S3, exclusive creation on the embedded server), the MD5 and size recorded for
the plan file an apply must apply, the workspace's SSH key, and the phase's workload identity tokens
(`workload_identity.py`)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from terrace.adapters.blobs import BlobStore
from terrace.config import Settings
from terrace.domain.jobs import JobSpec, ModuleTestOptions, Operation, Phase
from terrace.domain.runs import Run
from terrace.domain.tool_versions import BINARY_NAMES
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.workload_identity import WorkloadTokens
from terrace.services.workspaces.ssh_keys import SSHKeyService
from terrace.services.workspaces.variables import VariableService
from terrace.services.workspaces.workspaces import WorkspaceService


class JobSpecs:
    def __init__(
        self,
        workspaces: WorkspaceService,
        cvs: ConfigurationVersionService,
        variables: VariableService,
        blobs: BlobStore,
        settings: Settings,
        ssh_keys: SSHKeyService | None = None,
        workload: WorkloadTokens | None = None,
        tool_of: Callable[[str], str] = lambda _version: "",
    ) -> None:
        self._workspaces, self._cvs, self._variables = workspaces, cvs, variables
        self._blobs, self._settings, self._ssh_keys = blobs, settings, ssh_keys
        self._workload = workload
        # the tool of the catalog version a run resolved to (ToolVersionService.tool_of; "": none)
        self._tool_of = tool_of

    def _tool_cache(self, tool: str, version: str, ttl: int, own_runner: bool) -> tuple[str | None, str | None]:
        """The presigned GET and PUT of the bucket's copy of the release archive (`Settings.tool_blob_cache`)."""
        arch = self._settings.tool_blob_cache
        if not tool or not arch:
            return None, None
        key = f"tools/{tool}/{version}/{BINARY_NAMES[tool]}_{version}_linux_{arch}.zip"
        upload = self._blobs.presign_put(key, ttl, exclusive=True) if own_runner else None
        return self._blobs.presign_get(key, ttl), upload

    def build(self, run: Run, name: str, run_token: str, own_runner: bool = True) -> JobSpec:
        """The spec of the run's `name` phase ("plan" or "apply"), just claimed with `run_token`."""
        ws = self._workspaces.load(run.workspace_id)
        cv = self._cvs.load(run.configuration_version_id)
        state = run.phase(name)
        ttl = self._settings.phase_deadline_s
        variables = self._variables.recorded(run)
        phase: Phase = "plan" if name == "plan" else "apply"
        tool = run.tool or self._tool_of(run.terraform_version)  # a run recorded before runs had a tool: its
        # version's, the default tool first, as it was resolved
        tool_cache = self._tool_cache(tool, run.terraform_version, ttl, own_runner)
        # none for a module's test run: its test workspace is no workspace a cloud trusts, and a token naming it
        # must never pass for a real workspace's
        credentials = (
            self._workload.for_job(run, ws, phase, variables, started_at=state.started_at)
            if self._workload and not run.test
            else []
        )
        return JobSpec(
            job_id=state.id,
            run_id=run.id,
            phase=phase,
            attempt=state.attempt,
            organization=self._workspaces.organization_of(ws).name,  # the backend override addresses it by name
            workspace_id=ws.id,
            workspace_name=ws.name,
            project_name=self._workspaces.project_name_of(ws),
            terraform_version=run.terraform_version,
            tool=tool,
            tool_cache_url=tool_cache[0],
            tool_cache_upload_url=tool_cache[1],
            working_directory=ws.working_directory,
            # a version made from a forge's commit (services/vcs/): TFC_CONFIGURATION_VERSION_GIT_* in the run
            git_branch=str((cv.ingress or {}).get("branch") or ""),
            git_commit_sha=str((cv.ingress or {}).get("commit-sha") or ""),
            git_tag=str((cv.ingress or {}).get("tag") or ""),
            operation=Operation(
                is_destroy=run.is_destroy,
                refresh=run.refresh,
                refresh_only=run.refresh_only,
                target_addrs=run.target_addrs,
                replace_addrs=run.replace_addrs,
                invoke_action_addrs=run.invoke_action_addrs,
                speculative=run.plan_only,
                save_plan=run.save_plan,
                query=run.query,
                generate_config_out=run.generate_config_out,
                test=ModuleTestOptions(**run.test_options) if run.test else None,
            ),
            hostname=urlsplit(self._settings.public_url).netloc,
            run_token=run_token,
            configuration_url=self._cvs.download_url(cv, ttl, checked=False),
            configuration_md5=cv.md5,
            plan_file_url=self._blobs.presign_get(run.plan.artifact_key, ttl)
            if name == "apply" and run.plan.artifact_key
            else None,
            plan_file_md5=run.plan.artifact_md5 if name == "apply" else None,
            plan_file_size=run.plan.artifact_size if name == "apply" else None,
            plan_upload_url=self._blobs.presign_put(state.artifact_key, ttl, exclusive=True)
            if name == "plan" and state.artifact_key
            else None,
            plan_json_upload_url=self._blobs.presign_put(state.json_key, ttl, exclusive=True)
            if name == "plan" and state.json_key
            else None,
            variables=variables,
            ssh_private_key=self._ssh_keys.for_run(ws) if self._ssh_keys else None,
            heartbeat_interval_s=self._settings.job_heartbeat_s,
            workload_credentials=credentials,
            hyok=ws.extra.get("hyok-enabled") is True,
        )
