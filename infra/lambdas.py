"""How every Terrace Lambda is built: arm64, the terrace layer, Powertools settings, its own log group."""

from __future__ import annotations

import jsii
from aws_cdk import CfnResource, Duration, IAspect, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct

from infra.bundling import function_code, layer_code
from infra.settings import LAMBDA_PYTHON_VERSION

RUNTIME: lambda_.Runtime = getattr(lambda_.Runtime, "PYTHON_" + LAMBDA_PYTHON_VERSION.replace(".", "_"))
METRICS_NAMESPACE = "Terrace"
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
LOG_RETENTION_DAYS = 30
CUSTOM_METRICS_METADATA = "terrace:customMetrics"


def terrace_layer(scope: Construct, skip_bundling: bool) -> lambda_.LayerVersion:
    return lambda_.LayerVersion(
        scope,
        "TerraceLayer",
        code=layer_code(skip_bundling),
        compatible_runtimes=[RUNTIME],
        compatible_architectures=[lambda_.Architecture.ARM_64],
        description="terrace package and its dependencies (arm64 wheels)",
    )


def terrace_function(
    scope: Construct,
    construct_id: str,
    *,
    folder: str,
    layer: lambda_.ILayerVersion,
    environment: dict[str, str],
    timeout: Duration = Duration.seconds(30),
    memory_mb: int = 512,
    tracing: bool | None = False,
    metrics: tuple[str, ...] = (),
    role: iam.IRole | None = None,
) -> lambda_.Function:
    """`tracing`: X-Ray active tracing (Lambda samples 1 request a second and 5% beyond: at Terrace's rates nearly
    every request, $5 a million), None: none at all (no X-Ray permission either), otherwise pass-through (no trace
    unless a caller sampled one). `metrics`: the
    custom metrics the handler publishes ($0.30 each a month, prorated by the hours they are published): none at
    all unless given (`terrace:monitoring`: they feed the dashboard), recorded on the template for bench/cost.py.
    `role`: the function's own role (default: a new one with AWS's basic execution policy)."""
    log_group = logs.LogGroup(
        scope, f"{construct_id}Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
    )
    fn = lambda_.Function(
        scope,
        construct_id,
        runtime=RUNTIME,
        architecture=lambda_.Architecture.ARM_64,
        handler="handler.lambda_handler",
        code=function_code(folder),
        layers=[layer],
        timeout=timeout,
        memory_size=memory_mb,
        tracing=(
            lambda_.Tracing.ACTIVE
            if tracing
            else lambda_.Tracing.DISABLED
            if tracing is None
            else lambda_.Tracing.PASS_THROUGH
        ),
        log_group=log_group,
        role=role,
        environment={
            "POWERTOOLS_SERVICE_NAME": f"terrace-{folder}",
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            "POWERTOOLS_TRACE_DISABLED": "false" if tracing else "true",
            "POWERTOOLS_METRICS_DISABLED": "false" if metrics else "true",
            "TERRACE_TEMPLATES_DIR": "/opt/python/templates",
            **environment,
        },
    )
    if metrics:
        cfn = fn.node.default_child
        assert isinstance(cfn, lambda_.CfnFunction)
        cfn.add_metadata(CUSTOM_METRICS_METADATA, list(metrics))
    return fn


@jsii.implements(IAspect)
class Graviton:
    """Every Lambda function of the stack on arm64, the CDK's own deploy-time providers too (they pick x86)."""

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, CfnResource) and node.cfn_resource_type == "AWS::Lambda::Function":
            node.add_property_override("Architectures", ["arm64"])


@jsii.implements(IAspect)
class LogGroupsGoWithTheStack:
    """Every log group of the stack is deleted with it and kept a month at most, the log groups the CDK makes for
    its own providers too (they default to two years, retained): the teardown promise of docs/aws/index.md. A
    provider function of the CDK's custom resource framework (`CustomResourceProvider`: the default security group's
    restriction) names no log group and would write to one Lambda creates on its first run, which never expires and
    outlives the stack: it gets one of the stack's. (A `lambda.Function` names its own, or the CDK makes its
    `/aws/lambda/<name>` group, as for `AwsCustomResource`: both are log groups of the stack, visited above.)"""

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, logs.CfnLogGroup):
            node.apply_removal_policy(RemovalPolicy.DESTROY)
            days = node.retention_in_days
            if not isinstance(days, int | float) or days > LOG_RETENTION_DAYS:
                node.retention_in_days = LOG_RETENTION_DAYS
        elif (
            isinstance(node, CfnResource)
            and not isinstance(node, lambda_.CfnFunction)
            and node.cfn_resource_type == "AWS::Lambda::Function"
        ):
            scope = node.node.scope
            if scope is None or scope.node.try_find_child(f"{node.node.id}Logs") is not None:
                return
            group = logs.CfnLogGroup(scope, f"{node.node.id}Logs", retention_in_days=LOG_RETENTION_DAYS)
            group.apply_removal_policy(RemovalPolicy.DESTROY)
            node.add_property_override("LoggingConfig.LogGroup", group.ref)
