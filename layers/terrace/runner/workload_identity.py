"""A job's workload identity tokens (dynamic provider credentials), handed to its children as HCP Terraform's
agents do: each token in a file of the runner's job folder that only the job's uid reads (root:<job gid>, 0640;
the folder is 0711), and the variables each provider reads pointing at it (AWS_WEB_IDENTITY_TOKEN_FILE with
AWS_ROLE_ARN, GOOGLE_APPLICATION_CREDENTIALS naming an external_account file, ARM_OIDC_TOKEN_FILE_PATH with
ARM_CLIENT_ID, TERRAFORM_VAULT_AUTH_JWT with VAULT_ADDR, TFC_WORKLOAD_IDENTITY_TOKEN). The tokens come in the
job's spec, signed by the server; the runner holds no key. Used by every runner (`terrace runner`, agents)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from terrace.domain.jobs import WorkloadCredential
from terrace.runner.job_folder import JobFolder
from terrace.runner.rundir import RunSetupError


class WorkloadIdentityError(RunSetupError):
    """A credential the workspace's TFC_* variables ask for cannot be made: the job fails with this."""


def install(folder: JobFolder, credentials: Iterable[WorkloadCredential]) -> dict[str, str]:
    """Writes each token (and a GCP credentials file) into the runner's folder; returns the children's variables."""
    env: dict[str, str] = {}
    for credential in credentials:
        if credential.error:
            raise WorkloadIdentityError(credential.error)
        token_file = folder.write(f"workload-identity-{credential.kind}.jwt", credential.token.encode(), job_reads=True)
        env.update(credential.env)
        env.update({name: str(token_file) for name in credential.token_file_env})
        env.update(dict.fromkeys(credential.token_env, credential.token))
        if credential.gcp_credentials is not None:
            document = {**credential.gcp_credentials, "credential_source": {"file": str(token_file)}}
            path = folder.write("workload-identity-gcp.json", json.dumps(document).encode(), job_reads=True)
            env["GOOGLE_APPLICATION_CREDENTIALS"] = str(path)
    return env


def tokens(credentials: Iterable[WorkloadCredential]) -> list[str]:
    """The tokens, for the log masker."""
    return [c.token for c in credentials if c.token]
