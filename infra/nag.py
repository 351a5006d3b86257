"""cdk-nag AwsSolutions findings Terrace accepts, each with its reason.

Acknowledged by the stack itself (CDK Validations), so `cdk synth` and the tests see the same set. Granular
IAM findings name the exact action or resource pattern accepted, never a blanket rule."""

from __future__ import annotations

from aws_cdk import Acknowledgment, CfnElement, Stack, Validations
from constructs import Construct

GENERAL = {
    "AwsSolutions-SMG4": "the only Secrets Manager secret is the optional Cognito app client's secret, which Cognito "
    "owns (rotating it means a new app client); the stack's own secrets are SSM parameters the bootstrap replaces "
    "when terrace:rotateSecrets changes (docs/aws/secrets.md)",
    "AwsSolutions-APIG4": "authentication is the TFC bearer token, checked by the application on every request "
    "(terraform and tofu cannot sign requests for IAM or Cognito authorizers)",
    "AwsSolutions-L1": "the Lambda runtime is pinned to the Python version the layer's wheels are built for "
    "(infra/settings.py LAMBDA_PYTHON_VERSION) and upgraded deliberately",
    "AwsSolutions-ECS4": "runner tasks are short-lived and log to CloudWatch Logs; run metrics are published by "
    "the runtime; Container Insights would add per-task metric cost",
    "AwsSolutions-ECS2": "the runner's environment holds only URLs and tuning values; the scaler adds per task its "
    "organization, id and retirement time, no secret: the runner proves it is its task with a GetCallerIdentity "
    "signed by its task role and gets its token, so no token or code is in what ecs:DescribeTasks or CloudTrail show",
    "AwsSolutions-CFR1": "Terrace serves its own users wherever they are; geo restriction is a per-deployment choice",
    "AwsSolutions-CFR2": "WAF has a fixed monthly cost that breaks the near-zero idle target; the HTTP API throttles "
    "and the application authenticates every request",
    "AwsSolutions-COG8": "Cognito's Plus feature plan (threat protection) is a per-user monthly cost; operators who "
    "need it switch the optional user pool to it (or bring their own issuer)",
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]": (
        "the AWS-maintained minimum for a Lambda to write its own logs"
    ),
    "AwsSolutions-IAM5[Resource::*]": "only for actions without resource-level permissions (xray:PutTraceSegments, "
    "xray:PutTelemetryRecords, ecr:GetAuthorizationToken, ecs:ListTasks pinned to the cluster by condition); "
    "tests/infra asserts no other action is granted on *",
}
ECS_TASKS = "arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task"
DEFAULT_DOMAIN = {
    "AwsSolutions-CFR4": "with the default *.cloudfront.net certificate CloudFront fixes the viewer TLS policy; "
    "deploy with terrace:domainName and terrace:certificateArn to get TLSv1.2_2021",
}


def _ref(construct: Construct) -> str:
    """How cdk-nag writes a resource in a granular finding: <LogicalId.Arn> or <LogicalId>."""
    element = construct.node.default_child
    assert isinstance(element, CfnElement)
    return Stack.of(construct).get_logical_id(element)


CDK_ASSETS = "arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*"


def granular_findings(
    *,
    table: Construct,
    blobs: Construct,
    scaler: Construct,
    policy: Construct,
    cluster: Construct,
    assets: Construct,
) -> dict[str, str]:
    blob_grant = "objects of the one blob bucket (keyed by organization/workspace/run ids), no version deletes"
    key_grant = "grant_encrypt_decrypt on the one KMS key for sensitive variables"
    findings = {
        f"AwsSolutions-IAM5[Resource::<{_ref(table)}.Arn>/index/*]": "queries on the table's own GSIs",
        f"AwsSolutions-IAM5[Resource::<{_ref(blobs)}.Arn>/*]": blob_grant,
        f"AwsSolutions-IAM5[Resource::<{_ref(blobs)}.Arn>/logs/*]": "the logs function reads the log archives only",
        f"AwsSolutions-IAM5[Resource::<{_ref(scaler)}.Arn>:*]": "the api invokes the scaler (any version)",
        f"AwsSolutions-IAM5[Resource::<{_ref(policy)}.Arn>:*]": "the api and events invoke the policy function",
        f"AwsSolutions-IAM5[Resource::{ECS_TASKS}/<{_ref(cluster)}>/*]": (
            "describe/stop runner tasks of Terrace's own cluster only (task ids are not known in advance)"
        ),
        f"AwsSolutions-IAM5[Resource::<{_ref(assets)}.Arn>/*]": (
            "the static-files deployment writes and prunes the web UI's files in the assets bucket"
        ),
        f"AwsSolutions-IAM5[Resource::{CDK_ASSETS}]": (
            "the static-files deployment reads its zip from the CDK bootstrap assets bucket"
        ),
        "AwsSolutions-IAM5[Action::kms:ReEncrypt*]": key_grant,
        "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]": key_grant,
    }
    deployment = "the static-files deployment (CDK BucketDeployment) syncs the assets bucket's static/ folder"
    for action in ("s3:GetObject*", "s3:GetBucket*", "s3:List*", "s3:DeleteObject*", "s3:Abort*"):
        findings[f"AwsSolutions-IAM5[Action::{action}]"] = deployment
    return findings


def acknowledge(stack: Stack, findings: dict[str, str]) -> None:
    for rule_id, reason in findings.items():
        Validations.of(stack).acknowledge(Acknowledgment(id=rule_id, reason=reason))
