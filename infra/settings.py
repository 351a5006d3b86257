"""Deploy-time choices, read from CDK context (cdk.json or `-c key=value`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from constructs import Construct

# One Python version for the Lambda runtime and the wheels bundled into the layer.
LAMBDA_PYTHON_VERSION = "3.12"


def _flag(value: Any) -> bool:
    return str(value).lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class DeploySettings:
    skip_bundling: bool = False  # tests: stage the sources as they are, download nothing
    # runners in private subnets behind one NAT gateway (~$33 a month + $0.045/GB): the CloudFront URL and the
    # provider registries are on the internet, so isolated subnets with endpoints only could not run a job
    private_subnets: bool = False
    domain_name: str | None = None  # custom hostname served by CloudFront
    certificate_arn: str | None = None  # ACM certificate in us-east-1 for domain_name
    max_runners: int = 4
    # an idle runner exits after its brisk polls (10 s: the apply that follows its plan comes within them)
    runner_idle_exit_s: int = 10
    # a runner whose run's work is done (it served a job and holds no plan for its apply) exits after this many idle
    # seconds instead: 0, at its first empty answer (the warm window's runner waits for the next run)
    runner_done_exit_s: int = 0
    runner_cpu: int = 512  # Fargate CPU units (Graviton): half a vCPU; plans and applies wait on the network
    runner_memory_mib: int = 2048
    max_runners_per_organization: int = 0  # 0: max_runners is the only limit
    # idle runners kept alive for each organization that had work within a day (docs/performance.md; bench.cost)
    warm_runners: int = 0
    # one runner, of plans only, on Fargate Spot, kept this many minutes after an organization's activity (a workspace
    # opened by a CLI or a person, a run): a plan after `terraform init` starts at once (docs/performance.md); 0: off
    warm_window_minutes: int = 15
    # speculative plans run on FARGATE_SPOT (FARGATE when Spot has no capacity): ~70% cheaper, interruptible
    speculative_on_spot: bool = True
    # push the runner image with zstd-compressed layers (faster extraction on Fargate): needs a docker whose
    # image store is containerd's (docs/aws/runners.md, "Fargate Spot, warm runners and faster runner starts")
    runner_image_zstd: bool = False
    # the CLI's log reads straight to the logs function's URL (infra/log_reads.py), not through CloudFront and the
    # HTTP API: a read is one Lambda request, nothing more; false: the CLI sees one hostname only
    log_reads_direct: bool = True
    alarm_email: str | None = None
    # requests per second (steady, burst) on the HTTP API, one budget per kind of client, so a noisy one cannot starve
    # the others (`infra/api.py`): terraform/tofu and API clients; runners and agents; the web UI
    api_rate_limit: int = 50
    api_burst_limit: int = 100
    runner_rate_limit: int = 50
    runner_burst_limit: int = 100
    ui_rate_limit: int = 20
    ui_burst_limit: int = 40
    # UI single sign-on: a Cognito user pool the stack creates, or an existing OpenID Connect issuer
    cognito: bool = False
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret_arn: str | None = None  # Secrets Manager secret holding the client secret
    oidc_groups_claim: str = "groups"
    # notification e-mails through SES: a verified sender (an address, or an address of a verified domain)
    mail_from: str | None = None
    # opt-in, each with a monthly cost (docs/aws/cost.md): a dashboard and alarms; X-Ray traces of the API
    # (Lambda samples 1 request a second and 5% beyond); a customer-managed KMS key sealing sensitive values
    monitoring: bool = False
    tracing: bool = False
    kms_key: bool = False
    legacy_kms_key_arn: str | None = None  # the KMS key of a stack from before the data key: opens old values
    rotate_secrets: str = ""  # a new value replaces the admin token and the URL-signing key on the next deploy
    # the audit trail's copy in CloudWatch Logs (beside its daily objects in the blob bucket), kept a month as every
    # log group of the stack
    audit_logs: bool = False
    # the release mirrors runners fetch terraform and OpenTofu from, in the vendors' layout (default: the vendors'
    # public release sites; an air-gapped deployment names its own copy): the API, the daily catalog sync and the
    # runners read the same
    tool_mirror_terraform: str = ""
    tool_mirror_opentofu: str = ""

    def tool_mirrors(self) -> dict[str, str]:
        """The mirror settings of the API, the functions and the runners (only those set)."""
        named = {"TERRACE_TOOL_MIRROR_TERRAFORM": self.tool_mirror_terraform}
        named["TERRACE_TOOL_MIRROR_OPENTOFU"] = self.tool_mirror_opentofu
        return {key: value for key, value in named.items() if value}

    @classmethod
    def from_context(cls, scope: Construct) -> DeploySettings:
        def ctx(name: str) -> Any:
            return scope.node.try_get_context(f"terrace:{name}")

        domain = ctx("domainName") or None
        certificate = ctx("certificateArn") or None
        if bool(domain) != bool(certificate):
            raise ValueError("terrace:domainName and terrace:certificateArn must be set together")
        issuer = ctx("oidcIssuer") or None
        if issuer and not (ctx("oidcClientId") and ctx("oidcClientSecretArn")):
            raise ValueError("terrace:oidcIssuer needs terrace:oidcClientId and terrace:oidcClientSecretArn")
        if issuer and _flag(ctx("cognito")):
            raise ValueError("choose one of terrace:cognito and terrace:oidcIssuer")
        mirrors = {name: str(ctx(name) or "").rstrip("/") for name in ("toolMirrorTerraform", "toolMirrorOpentofu")}
        for name, mirror in mirrors.items():
            if mirror and not mirror.startswith("https://"):
                raise ValueError(f"terrace:{name} must be an https:// URL (the mirror's base), not {mirror!r}")
        return cls(
            skip_bundling=_flag(ctx("skipBundling")),
            private_subnets=_flag(ctx("privateSubnets")),
            domain_name=domain,
            certificate_arn=certificate,
            max_runners=int(ctx("maxRunners") or cls.max_runners),
            runner_idle_exit_s=int(ctx("runnerIdleExitSeconds") or cls.runner_idle_exit_s),
            runner_done_exit_s=int(ctx("runnerDoneExitSeconds") or cls.runner_done_exit_s),
            runner_cpu=int(ctx("runnerCpu") or cls.runner_cpu),
            runner_memory_mib=int(ctx("runnerMemoryMiB") or cls.runner_memory_mib),
            max_runners_per_organization=int(ctx("maxRunnersPerOrganization") or 0),
            warm_runners=int(ctx("warmRunners") or 0),
            warm_window_minutes=int(
                ctx("warmWindowMinutes") if ctx("warmWindowMinutes") is not None else cls.warm_window_minutes
            ),
            speculative_on_spot=str(
                ctx("speculativeOnSpot") if ctx("speculativeOnSpot") is not None else "true"
            ).lower()
            in ("1", "true", "yes", "on"),
            runner_image_zstd=_flag(ctx("runnerImageZstd")),
            log_reads_direct=str(ctx("logReadsDirect") if ctx("logReadsDirect") is not None else "true").lower()
            in ("1", "true", "yes", "on"),
            alarm_email=ctx("alarmEmail") or None,
            api_rate_limit=int(ctx("apiRateLimit") or cls.api_rate_limit),
            api_burst_limit=int(ctx("apiBurstLimit") or cls.api_burst_limit),
            runner_rate_limit=int(ctx("runnerRateLimit") or cls.runner_rate_limit),
            runner_burst_limit=int(ctx("runnerBurstLimit") or cls.runner_burst_limit),
            ui_rate_limit=int(ctx("uiRateLimit") or cls.ui_rate_limit),
            ui_burst_limit=int(ctx("uiBurstLimit") or cls.ui_burst_limit),
            cognito=_flag(ctx("cognito")),
            oidc_issuer=issuer,
            oidc_client_id=ctx("oidcClientId") or None,
            oidc_client_secret_arn=ctx("oidcClientSecretArn") or None,
            oidc_groups_claim=ctx("oidcGroupsClaim") or ("cognito:groups" if _flag(ctx("cognito")) else "groups"),
            mail_from=ctx("mailFrom") or None,
            monitoring=_flag(ctx("monitoring")) or bool(ctx("alarmEmail")),
            tracing=_flag(ctx("tracing")),
            kms_key=_flag(ctx("kmsKey")),
            legacy_kms_key_arn=ctx("legacyKmsKeyArn") or None,
            rotate_secrets=str(ctx("rotateSecrets") or ""),
            audit_logs=_flag(ctx("auditLogs")),
            tool_mirror_terraform=mirrors["toolMirrorTerraform"],
            tool_mirror_opentofu=mirrors["toolMirrorOpentofu"],
        )
