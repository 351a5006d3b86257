"""One synthesized Terrace template per session (default settings), plus one with every option turned on.

Synth runs with `terrace:skipBundling` (no pip, no Docker, nothing downloaded) and the cdk-nag
AwsSolutions pack registered exactly as infra/app.py does for `cdk synth`."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # the `infra` package lives at the repository root
os.environ.setdefault("JSII_RUNTIME_PACKAGE_CACHE_ROOT", str(REPO / ".build" / "jsii-cache"))

STACK_NAME = "Terrace"


@dataclass
class Synth:
    template: dict[str, Any]
    outdir: Path
    validation_error: str | None
    stack: Any = None
    report: dict[str, Any] = field(default_factory=dict)

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.template["Resources"].items() if r["Type"] == resource_type}

    def by_path(self, suffix: str) -> tuple[str, dict[str, Any]]:
        """The one resource whose construct path ends with `suffix`."""
        found = [
            (k, r)
            for k, r in self.template["Resources"].items()
            if r.get("Metadata", {}).get("aws:cdk:path", "").endswith(suffix)
        ]
        assert len(found) == 1, f"{suffix}: {[k for k, _ in found]}"
        return found[0]

    def assertions(self) -> Any:
        from aws_cdk.assertions import Template

        return Template.from_json(self.template)


def synthesize(outdir: Path, context: dict[str, Any]) -> Synth:
    import aws_cdk as cdk

    from infra.app import build

    # The same context `cdk synth` uses (feature flags from cdk.json), then the test's own settings.
    cdk_context = json.loads((REPO / "cdk.json").read_text())["context"]
    app = cdk.App(
        outdir=str(outdir),
        context={
            **cdk_context,
            "terrace:skipBundling": "true",
            "aws:cdk:enable-path-metadata": True,
            **context,
        },
    )
    stack = build(app)
    error = None
    try:
        app.synth()
    except Exception as exc:  # noqa: BLE001 - a failed validation is reported by test_nag
        error = str(exc)
    report_file = outdir / "validation-report.json"
    report = json.loads(report_file.read_text()) if report_file.exists() else {}
    template = json.loads((outdir / f"{STACK_NAME}.template.json").read_text())
    return Synth(template=template, outdir=outdir, validation_error=error, stack=stack, report=report)


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(tmp_path_factory.mktemp("cdk-default"), {})


@pytest.fixture(scope="session")
def synth_options(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """Private subnets behind a NAT gateway, a custom domain with its certificate, alarm e-mails (so the dashboard
    and alarms), a Cognito user pool for single sign-on, an SES sender for notification e-mails, X-Ray tracing of
    the API and a customer-managed KMS key."""
    return synthesize(
        tmp_path_factory.mktemp("cdk-options"),
        {
            "terrace:privateSubnets": "true",
            "terrace:domainName": "terrace.example.com",
            "terrace:certificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/abc",
            "terrace:alarmEmail": "ops@example.com",
            "terrace:maxRunners": "7",
            "terrace:maxRunnersPerOrganization": "3",
            "terrace:warmRunners": "1",
            "terrace:warmWindowMinutes": "0",
            "terrace:speculativeOnSpot": "false",
            "terrace:runnerImageZstd": "true",
            "terrace:cognito": "true",
            "terrace:mailFrom": "terrace@example.com",
            "terrace:tracing": "true",
            "terrace:kmsKey": "true",
            "terrace:auditLogs": "true",
        },
    )


LEGACY_KMS_KEY_ARN = "arn:aws:kms:eu-west-1:123456789012:key/0b1e7e55-0000-4000-8000-000000000000"
# the context of `synth_variants`: options each of which one test reads, synthesized together once per session (a
# synthesis is seconds of CPU: one per option tested cost a synthesis each); none touches what another one reads
VARIANT_CONTEXT = {
    "terrace:rotateSecrets": "2026-11",  # test_cdk_functions
    "terrace:runnerRateLimit": "200",  # test_cdk_api_web
    "terrace:uiBurstLimit": "9",
    "terrace:legacyKmsKeyArn": LEGACY_KMS_KEY_ARN,  # test_cdk_data
    "terrace:toolMirrorTerraform": "https://mirror.internal/hashicorp/",  # test_cdk_runner
    "terrace:toolMirrorOpentofu": "https://mirror.internal/opentofu",
    "terrace:nag": "false",
}


@pytest.fixture(scope="session")
def variant_context() -> dict[str, str]:
    return dict(VARIANT_CONTEXT)


@pytest.fixture(scope="session")
def synth_variants(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(tmp_path_factory.mktemp("cdk-variants"), VARIANT_CONTEXT)


@pytest.fixture(scope="session")
def template(synth: Synth) -> dict[str, Any]:
    return synth.template
