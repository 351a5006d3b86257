"""The ECS service-linked role (`AWSServiceRoleForECS`), made sure of before the runners' cluster is created.

An account that never used ECS has no such role; ECS creates it on the first cluster, but a cluster created with
capacity providers in the same breath (FARGATE and FARGATE_SPOT here) can fail before the new role is usable. A
custom resource asks IAM to create it first and takes "the name has been taken" (the account has it) as done. It
is never deleted: the account's other clusters use it."""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import custom_resources as cr
from constructs import Construct

ECS_SERVICE = "ecs.amazonaws.com"
ECS_ROLE = "AWSServiceRoleForECS"


def ecs_service_linked_role(scope: Construct) -> cr.AwsCustomResource:
    role_arn = f"arn:{Aws.PARTITION}:iam::{Aws.ACCOUNT_ID}:role/aws-service-role/{ECS_SERVICE}/{ECS_ROLE}"
    create = cr.AwsSdkCall(
        service="IAM",
        action="createServiceLinkedRole",
        parameters={"AWSServiceName": ECS_SERVICE},
        physical_resource_id=cr.PhysicalResourceId.of(ECS_ROLE),
        ignore_error_codes_matching="InvalidInput",  # "Service role name AWSServiceRoleForECS has been taken"
    )
    statement = iam.PolicyStatement(
        actions=["iam:CreateServiceLinkedRole"],
        resources=[role_arn],
        conditions={"StringLike": {"iam:AWSServiceName": ECS_SERVICE}},
    )
    return cr.AwsCustomResource(
        scope,
        "EcsServiceLinkedRole",
        resource_type="Custom::EcsServiceLinkedRole",
        on_create=create,
        on_update=create,
        policy=cr.AwsCustomResourcePolicy.from_statements([statement]),
        install_latest_aws_sdk=False,
    )
