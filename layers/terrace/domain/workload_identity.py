"""Workload identity (HCP Terraform's dynamic provider credentials): which tokens a run phase gets, from the
`TFC_*` environment variables its workspace and variable sets give it, and what each token claims.

A token is a JWT the server signs (RS256, `services/access/workload_issuer.py`) for one phase of one run: `sub`
is `organization:<org>:project:<project>:workspace:<workspace>:run_phase:<plan|apply>`, `aud` the cloud's
audience, the `terraform_*` claims name the organization, project, workspace and run; it expires with the
phase's deadline. The runner hands it to the providers the way each reads one (`runner/workload_identity.py`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

AUDIENCES = {
    "aws": "aws.workload.identity",
    "gcp": "gcp.workload.identity",
    "azure": "api://AzureADTokenExchange",
    "vault": "vault.workload.identity",
}
NBF_SKEW_S = 5  # as HCP: not-before a few seconds before issue, for verifiers' clock skew
GCP_STS = "https://sts.googleapis.com/v1/token"
GCP_IMPERSONATE = "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/{}:generateAccessToken"
_GCP_PROVIDER = re.compile(r"^projects/\d+/locations/global/workloadIdentityPools/[^/]+/providers/[^/]+\Z")


@dataclass(frozen=True)
class Wanted:
    """One token a phase asks for, and how the runner hands it over (or why it cannot be made)."""

    kind: str  # aws | gcp | azure | vault | generic
    audience: str
    env: dict[str, str] = field(default_factory=dict)  # plain variables the child gets
    token_file_env: tuple[str, ...] = ()  # variables that name the token's file
    token_env: tuple[str, ...] = ()  # variables that hold the token itself
    gcp_credentials: dict[str, Any] | None = None  # an external_account file; credential_source filled by the runner
    error: str | None = None  # the run cannot get this credential: the job fails with this message


def _on(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() == "true"


def _per_phase(env: Mapping[str, str], prefix: str, suffix: str, phase: str) -> str:
    """`<prefix>_PLAN_<suffix>` / `<prefix>_APPLY_<suffix>` for the phase, else `<prefix>_RUN_<suffix>`."""
    return env.get(f"{prefix}_{phase.upper()}_{suffix}") or env.get(f"{prefix}_RUN_{suffix}", "")


def _audience(env: Mapping[str, str], kind: str) -> str:
    return env.get(f"TFC_{kind.upper()}_WORKLOAD_IDENTITY_AUDIENCE") or AUDIENCES[kind]


def wanted(env: Mapping[str, str], phase: str, run_id: str) -> list[Wanted]:
    """The tokens the run's environment variables ask for, in a fixed order (aws, gcp, azure, vault, generic)."""
    found: list[Wanted] = []
    if _on(env, "TFC_AWS_PROVIDER_AUTH"):
        role = _per_phase(env, "TFC_AWS", "ROLE_ARN", phase)
        found.append(
            Wanted(
                "aws",
                _audience(env, "aws"),
                {"AWS_ROLE_ARN": role, "AWS_ROLE_SESSION_NAME": f"terrace-{run_id}"},
                token_file_env=("AWS_WEB_IDENTITY_TOKEN_FILE",),
                error=None
                if role
                else f"TFC_AWS_PROVIDER_AUTH is set but not TFC_AWS_RUN_ROLE_ARN (or TFC_AWS_{phase.upper()}_ROLE_ARN)",
            )  # fmt: skip
        )
    if _on(env, "TFC_GCP_PROVIDER_AUTH"):
        found.append(_gcp(env, phase))
    if _on(env, "TFC_AZURE_PROVIDER_AUTH"):
        client = _per_phase(env, "TFC_AZURE", "CLIENT_ID", phase)
        found.append(
            Wanted(
                "azure",
                _audience(env, "azure"),
                {"ARM_USE_OIDC": "true", "ARM_CLIENT_ID": client},
                token_file_env=("ARM_OIDC_TOKEN_FILE_PATH",),
                error=None
                if client
                else f"TFC_AZURE_PROVIDER_AUTH is set but not TFC_AZURE_RUN_CLIENT_ID "
                f"(or TFC_AZURE_{phase.upper()}_CLIENT_ID)",
            )  # fmt: skip
        )
    if _on(env, "TFC_VAULT_PROVIDER_AUTH"):
        found.append(_vault(env, phase))
    if env.get("TFC_WORKLOAD_IDENTITY_AUDIENCE"):
        generic = env["TFC_WORKLOAD_IDENTITY_AUDIENCE"]
        found.append(Wanted("generic", generic, token_env=("TFC_WORKLOAD_IDENTITY_TOKEN",)))
    return found


def _gcp(env: Mapping[str, str], phase: str) -> Wanted:
    email = _per_phase(env, "TFC_GCP", "SERVICE_ACCOUNT_EMAIL", phase)
    provider = env.get("TFC_GCP_WORKLOAD_PROVIDER_NAME", "")
    parts = ("PROJECT_NUMBER", "WORKLOAD_POOL_ID", "WORKLOAD_PROVIDER_ID")
    if not provider and all(env.get(f"TFC_GCP_{n}") for n in parts):
        provider = (f"projects/{env['TFC_GCP_PROJECT_NUMBER']}/locations/global/workloadIdentityPools/"
                    f"{env['TFC_GCP_WORKLOAD_POOL_ID']}/providers/{env['TFC_GCP_WORKLOAD_PROVIDER_ID']}")  # fmt: skip
    error = None
    if not email:
        error = (f"TFC_GCP_PROVIDER_AUTH is set but not TFC_GCP_RUN_SERVICE_ACCOUNT_EMAIL "
                 f"(or TFC_GCP_{phase.upper()}_SERVICE_ACCOUNT_EMAIL)")  # fmt: skip
    elif not _GCP_PROVIDER.match(provider):
        error = ("TFC_GCP_PROVIDER_AUTH needs TFC_GCP_WORKLOAD_PROVIDER_NAME (projects/<number>/locations/global/"
                 "workloadIdentityPools/<pool>/providers/<provider>) or TFC_GCP_PROJECT_NUMBER, "
                 "TFC_GCP_WORKLOAD_POOL_ID and TFC_GCP_WORKLOAD_PROVIDER_ID")  # fmt: skip
    credentials = {
        "type": "external_account",
        "audience": f"//iam.googleapis.com/{provider}",
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": GCP_STS,
        "service_account_impersonation_url": GCP_IMPERSONATE.format(email),
        "credential_source": {"file": ""},
    }
    return Wanted("gcp", _audience(env, "gcp"), gcp_credentials=credentials, error=error)


def _vault(env: Mapping[str, str], phase: str) -> Wanted:
    address, role = env.get("TFC_VAULT_ADDR", ""), _per_phase(env, "TFC_VAULT", "ROLE", phase)
    plain = {"VAULT_ADDR": address}
    if env.get("TFC_VAULT_NAMESPACE"):
        plain["VAULT_NAMESPACE"] = env["TFC_VAULT_NAMESPACE"]
    # the vault provider's `auth_login_jwt` reads the token from TERRAFORM_VAULT_AUTH_JWT
    error = None if address and role else "TFC_VAULT_PROVIDER_AUTH needs TFC_VAULT_ADDR and TFC_VAULT_RUN_ROLE"
    return Wanted("vault", _audience(env, "vault"), plain, token_env=("TERRAFORM_VAULT_AUTH_JWT",), error=error)


@dataclass(frozen=True)
class Subject:
    """Who a phase is: what its token's `sub` and `terraform_*` claims say."""

    organization_id: str
    organization_name: str
    project_id: str
    project_name: str
    workspace_id: str
    workspace_name: str
    run_id: str
    phase: str  # plan | apply

    @property
    def full_workspace(self) -> str:
        return f"organization:{self.organization_name}:project:{self.project_name}:workspace:{self.workspace_name}"

    @property
    def sub(self) -> str:
        return f"{self.full_workspace}:run_phase:{self.phase}"


def claims(
    subject: Subject, *, issuer: str, audience: str, issued_at: int, expires_at: int, jti: str
) -> dict[str, Any]:
    return {
        "jti": jti,
        "iss": issuer,
        "aud": audience,
        "iat": issued_at,
        "nbf": issued_at - NBF_SKEW_S,
        "exp": expires_at,
        "sub": subject.sub,
        "terraform_organization_id": subject.organization_id,
        "terraform_organization_name": subject.organization_name,
        "terraform_project_id": subject.project_id,
        "terraform_project_name": subject.project_name,
        "terraform_workspace_id": subject.workspace_id,
        "terraform_workspace_name": subject.workspace_name,
        "terraform_full_workspace": subject.full_workspace,
        "terraform_run_id": subject.run_id,
        "terraform_run_phase": subject.phase,
    }
