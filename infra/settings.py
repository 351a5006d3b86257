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
    private_subnets: bool = False  # runners in isolated subnets reaching AWS through interface endpoints
    domain_name: str | None = None  # custom hostname served by CloudFront
    certificate_arn: str | None = None  # ACM certificate in us-east-1 for domain_name
    max_runners: int = 4
    runner_idle_exit_s: int = 60
    alarm_email: str | None = None
    api_rate_limit: int = 50  # requests per second, steady state
    api_burst_limit: int = 100

    @classmethod
    def from_context(cls, scope: Construct) -> DeploySettings:
        def ctx(name: str) -> Any:
            return scope.node.try_get_context(f"terrace:{name}")

        domain = ctx("domainName") or None
        certificate = ctx("certificateArn") or None
        if bool(domain) != bool(certificate):
            raise ValueError("terrace:domainName and terrace:certificateArn must be set together")
        return cls(
            skip_bundling=_flag(ctx("skipBundling")),
            private_subnets=_flag(ctx("privateSubnets")),
            domain_name=domain,
            certificate_arn=certificate,
            max_runners=int(ctx("maxRunners") or cls.max_runners),
            runner_idle_exit_s=int(ctx("runnerIdleExitSeconds") or cls.runner_idle_exit_s),
            alarm_email=ctx("alarmEmail") or None,
            api_rate_limit=int(ctx("apiRateLimit") or cls.api_rate_limit),
            api_burst_limit=int(ctx("apiBurstLimit") or cls.api_burst_limit),
        )
