"""How every Terrace Lambda is built: arm64, the terrace layer, Powertools settings, its own log group."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.bundling import function_code, layer_code
from infra.settings import LAMBDA_PYTHON_VERSION

RUNTIME: lambda_.Runtime = getattr(lambda_.Runtime, "PYTHON_" + LAMBDA_PYTHON_VERSION.replace(".", "_"))
METRICS_NAMESPACE = "Terrace"
LOG_RETENTION = logs.RetentionDays.ONE_MONTH


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
) -> lambda_.Function:
    log_group = logs.LogGroup(
        scope, f"{construct_id}Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
    )
    return lambda_.Function(
        scope,
        construct_id,
        runtime=RUNTIME,
        architecture=lambda_.Architecture.ARM_64,
        handler="handler.lambda_handler",
        code=function_code(folder),
        layers=[layer],
        timeout=timeout,
        memory_size=memory_mb,
        tracing=lambda_.Tracing.ACTIVE,
        log_group=log_group,
        environment={
            "POWERTOOLS_SERVICE_NAME": f"terrace-{folder}",
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            "TERRACE_TEMPLATES_DIR": "/opt/python/templates",
            **environment,
        },
    )
