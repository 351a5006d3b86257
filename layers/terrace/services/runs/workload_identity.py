"""The workload identity tokens of a claimed job (HCP Terraform's dynamic provider credentials): read from the
`TFC_*` env variables the run recorded (its workspace's and its variable sets'), signed by the issuer when the
job is claimed, handed over in its `JobSpec` (`workload_credentials`) and valid until the phase's deadline (counted
from the phase's start, as the reaper counts it, however late a retry claims it).
The server holds the key; a runner only ever sees the tokens of the jobs it claimed."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from datetime import datetime

from terrace.domain import workload_identity as wid
from terrace.domain.errors import NotFound
from terrace.domain.jobs import RunVariable, WorkloadCredential
from terrace.domain.projects import default_project_id
from terrace.domain.runs import Run
from terrace.domain.workspace import Workspace
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.projects import ProjectService
from terrace.services.access.workload_issuer import WorkloadIssuer

DEFAULT_PROJECT_NAME = "Default Project"


class WorkloadTokens:
    def __init__(
        self,
        issuer: WorkloadIssuer,
        organizations: OrganizationService,
        projects: ProjectService,
        ttl_s: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._issuer, self._organizations, self._projects = issuer, organizations, projects
        self._ttl_s, self._clock = ttl_s, clock

    def for_job(
        self, run: Run, ws: Workspace, phase: str, variables: list[RunVariable], started_at: str | None = None
    ) -> list[WorkloadCredential]:
        """`started_at`: when the phase started (its first claim); a token never outlives the phase's deadline,
        `started_at` + the deadline, which the reaper enforces: a phase claimed again late gets a shorter one."""
        env = {v.key: v.value for v in variables if v.category == "env"}
        wanted = wid.wanted(env, phase, run.id)
        if not wanted:
            return []
        subject = self.subject(run, ws, phase)
        issued = int(self._clock())
        expires = issued + self._ttl_s
        if started_at:
            started = datetime.fromisoformat(started_at.replace("Z", "+00:00")).timestamp()
            expires = max(issued + 1, min(expires, int(started) + self._ttl_s))
        credentials = []
        for want in wanted:
            token = ""
            if want.error is None:
                claims = wid.claims(
                    subject,
                    issuer=self._issuer.issuer,
                    audience=want.audience,
                    issued_at=issued,
                    expires_at=expires,
                    jti=secrets.token_hex(16),
                )
                token = self._issuer.sign(claims)
            credentials.append(
                WorkloadCredential(
                    kind=want.kind,
                    token=token,
                    env=want.env,
                    token_file_env=list(want.token_file_env),
                    token_env=list(want.token_env),
                    gcp_credentials=want.gcp_credentials,
                    error=want.error,
                )
            )
        return credentials

    def subject(self, run: Run, ws: Workspace, phase: str) -> wid.Subject:
        org = self._organizations.by_key(ws.organization)
        project_id = ws.project_id or default_project_id(ws.organization)
        try:
            project_name = self._projects.load(project_id).name
        except NotFound:  # the Default Project of an organization made before projects existed
            project_name = DEFAULT_PROJECT_NAME
        return wid.Subject(
            organization_id=org.id,
            organization_name=org.name,
            project_id=project_id,
            project_name=project_name,
            workspace_id=ws.id,
            workspace_name=ws.name,
            run_id=run.id,
            phase=phase,
        )
