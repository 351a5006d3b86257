"""The HTTP API (throttled, access-logged) and the `api` Lambda (FastAPI via Mangum) behind it.

Throttling is per route, and each kind of client has routes of its own (`BUDGETS`): the runner and agent protocols
(`/api/runner/*`, `/api/agent/*`), the web UI (`/app`, `/app/*`), and everything else (terraform/tofu, API
clients: the `$default` route, the stage's default limits). A burst of one kind (a script hammering the API, a busy
UI) is refused there (429) and leaves the others' budgets alone: the runs keep their runners' requests.

The API is created before its handler so CloudFront can point at it and the handler can learn the public
URL without a dependency cycle: Api <- Distribution <- Function <- Route."""

from __future__ import annotations

import json

import jsii
from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.lambdas import terrace_function
from infra.settings import DeploySettings

ACCESS_LOG_FORMAT = json.dumps(
    {
        "requestId": "$context.requestId",
        "ip": "$context.identity.sourceIp",
        "time": "$context.requestTime",
        "method": "$context.httpMethod",
        "path": "$context.path",
        "status": "$context.status",
        "latencyMs": "$context.responseLatency",
        "integrationError": "$context.integrationErrorMessage",
    }
)


# route paths -> the DeploySettings fields of their budget (rate, burst)
BUDGETS = {
    "/api/runner/{proxy+}": ("runner_rate_limit", "runner_burst_limit"),
    "/api/agent/{proxy+}": ("runner_rate_limit", "runner_burst_limit"),
    "/app": ("ui_rate_limit", "ui_burst_limit"),
    "/app/{proxy+}": ("ui_rate_limit", "ui_burst_limit"),
}


class Api(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings) -> None:
        super().__init__(scope, construct_id)
        self.http_api = apigw.HttpApi(
            self, "HttpApi", description="Terrace: TFC API, http backend, UI", create_default_stage=False
        )
        self.access_logs = logs.LogGroup(
            self, "AccessLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        self.stage = apigw.HttpStage(
            self,
            "DefaultStage",
            http_api=self.http_api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigw.ThrottleSettings(rate_limit=settings.api_rate_limit, burst_limit=settings.api_burst_limit),
            access_log_settings=_AccessLogs(self.access_logs),
        )
        self.function: lambda_.Function | None = None
        self._settings = settings

    def add_handler(
        self,
        *,
        layer: lambda_.ILayerVersion,
        environment: dict[str, str],
        tracing: bool = False,
        metrics: tuple[str, ...] = (),
    ) -> lambda_.Function:
        self.function = terrace_function(
            self,
            "Handler",
            folder="api",
            layer=layer,
            environment=environment,
            timeout=Duration.seconds(29),  # the HTTP API integration limit
            memory_mb=1024,
            tracing=tracing,
            metrics=metrics,
        )
        integration = integrations.HttpLambdaIntegration("Lambda", self.function)
        apigw.HttpRoute(
            self, "DefaultRoute", http_api=self.http_api, route_key=apigw.HttpRouteKey.DEFAULT, integration=integration
        )
        stage = self.stage.node.default_child
        assert isinstance(stage, apigw.CfnStage)
        budgets: dict[str, dict[str, int]] = {}
        for n, (path, (rate, burst)) in enumerate(BUDGETS.items()):
            key = apigw.HttpRouteKey.with_(path, apigw.HttpMethod.ANY)
            route = apigw.HttpRoute(
                self, f"BudgetRoute{n}", http_api=self.http_api, route_key=key, integration=integration
            )
            stage.node.add_dependency(route)  # a stage's route settings name routes that exist
            budgets[key.key] = {
                "ThrottlingRateLimit": getattr(self._settings, rate),
                "ThrottlingBurstLimit": getattr(self._settings, burst),
            }
        stage.add_property_override("RouteSettings", budgets)
        return self.function


@jsii.implements(apigw.IAccessLogSettings)
class _AccessLogs:
    """The stage's access logs: one JSON line per request into a log group."""

    def __init__(self, log_group: logs.ILogGroup) -> None:
        self._log_group = log_group

    @property
    def destination(self) -> apigw.IAccessLogDestination:
        return apigw.LogGroupLogDestination(self._log_group)

    @property
    def format(self) -> apigateway.AccessLogFormat:
        return apigateway.AccessLogFormat.custom(ACCESS_LOG_FORMAT)
