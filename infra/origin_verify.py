"""The origin-verify secret: CloudFront adds it to every request it sends the HTTP API (header
`X-Terrace-Origin-Verify`, replacing any viewer's header of that name) and the api function refuses requests
without it (terrace.web.origin_verify), so the `execute-api` endpoint cannot be used around CloudFront's headers,
logs and TLS policy. (The endpoint cannot simply be disabled: CloudFront reaches the API through it.)

CloudFormation cannot generate a random value, so a small inline function does on create; the value lives in the
distribution's configuration and the function's environment (readable, like them, by the account's
administrators only) and changes with `terrace:rotateSecrets`."""

from __future__ import annotations

from aws_cdk import CustomResource, Duration, RemovalPolicy, Token
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.lambdas import LOG_RETENTION, RUNTIME

HEADER = "X-Terrace-Origin-Verify"
ENV = "TERRACE_ORIGIN_VERIFY"
CODE = """
import secrets
import cfnresponse


def handler(event, context):
    old = event.get("OldResourceProperties") or {}
    keep = event["RequestType"] == "Delete" or (
        event["RequestType"] == "Update" and old.get("Rotation") == event["ResourceProperties"].get("Rotation")
    )
    value = event["PhysicalResourceId"].removeprefix("origin-verify-") if keep else secrets.token_urlsafe(32)
    cfnresponse.send(event, context, cfnresponse.SUCCESS, {"Value": value}, "origin-verify-" + value, noEcho=True)
"""


class OriginVerify(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, rotation: str) -> None:
        super().__init__(scope, construct_id)
        function = lambda_.Function(
            self,
            "Generator",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler="index.handler",
            code=lambda_.Code.from_inline(CODE),
            timeout=Duration.seconds(30),
            memory_size=128,
            log_group=logs.LogGroup(
                self, "GeneratorLogs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
            ),
        )
        resource = CustomResource(
            self,
            "Secret",
            service_token=function.function_arn,
            resource_type="Custom::TerraceOriginVerify",
            properties={"Rotation": rotation},
        )
        self.value: str = Token.as_string(resource.get_att("Value"))
