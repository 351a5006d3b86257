"""The origin-verify secret: CloudFront adds it to every request it sends the HTTP API (header
`X-Terrace-Origin-Verify`, replacing any viewer's header of that name) and the api function refuses requests
without it (terrace.web.origin_verify), so the `execute-api` endpoint cannot be used around CloudFront's headers,
logs and TLS policy. (The endpoint cannot simply be disabled: CloudFront reaches the API through it.)

CloudFormation cannot generate a random value, so a small inline function does on create and keeps it in an SSM
SecureString parameter of the stack (`/terrace/<stack>/origin-verify`, deleted with the stack), which it reads again
on an update; it changes with `terrace:rotateSecrets`. The custom resource's physical id is the constant
`origin-verify`: an id is shown to anyone who may describe the stack, so it never holds the value (it did before: an
update from such a stack keeps that value and moves it to the parameter). CloudFormation hands the value on as
`NoEcho` data to the distribution's configuration and the api function's environment."""

from __future__ import annotations

from aws_cdk import CustomResource, Duration, RemovalPolicy, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.lambdas import LOG_RETENTION, RUNTIME

HEADER = "X-Terrace-Origin-Verify"
ENV = "TERRACE_ORIGIN_VERIFY"
PHYSICAL_ID = "origin-verify"
CODE = """
import secrets

import boto3
import cfnresponse

PHYSICAL_ID = "origin-verify"
LEGACY = "origin-verify-"  # before: the value itself followed this prefix in the physical id


def value_for(event, ssm):
    props, old = event["ResourceProperties"], event.get("OldResourceProperties") or {}
    name = props["Parameter"]
    if event["RequestType"] == "Update" and old.get("Rotation") == props.get("Rotation"):
        try:
            return ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"]
        except ssm.exceptions.ParameterNotFound:
            legacy = event["PhysicalResourceId"]
            if legacy.startswith(LEGACY):
                return legacy[len(LEGACY):]
    return secrets.token_urlsafe(32)


def handler(event, context):
    physical_id = event.get("PhysicalResourceId") or PHYSICAL_ID
    try:
        ssm = boto3.client("ssm")
        name = event["ResourceProperties"]["Parameter"]
        if event["RequestType"] == "Delete":
            if physical_id == PHYSICAL_ID:  # not an older id CloudFormation cleans up after an update
                try:
                    ssm.delete_parameter(Name=name)
                except ssm.exceptions.ParameterNotFound:
                    pass
            cfnresponse.send(event, context, cfnresponse.SUCCESS, {}, physical_id)
            return
        value = value_for(event, ssm)
        ssm.put_parameter(Name=name, Value=value, Type="SecureString", Overwrite=True)
        cfnresponse.send(event, context, cfnresponse.SUCCESS, {"Value": value}, PHYSICAL_ID, noEcho=True)
    except Exception as exc:
        cfnresponse.send(event, context, cfnresponse.FAILED, {}, physical_id, reason=type(exc).__name__)
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
        stack = Stack.of(self)
        parameter = f"/terrace/{stack.stack_name}/origin-verify"
        arn = stack.format_arn(service="ssm", resource="parameter", resource_name=parameter.lstrip("/"))
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["ssm:GetParameter", "ssm:PutParameter", "ssm:DeleteParameter"], resources=[arn]
            )
        )
        resource = CustomResource(
            self,
            "Secret",
            service_token=function.function_arn,
            resource_type="Custom::TerraceOriginVerify",
            properties={"Rotation": rotation, "Parameter": parameter},
        )
        self.value: str = Token.as_string(resource.get_att("Value"))
