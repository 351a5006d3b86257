"""The workload identity issuer's signing keys (dynamic provider credentials): SSM SecureString parameters under
`/terrace/<stack>/workload-identity/<kid>` (`adapters/ssm_signing_keys.py`), free at rest. The api function signs
the tokens of the jobs it hands out, publishes the JWKS and makes the first key; `terrace workload-identity rotate`
(an operator's credentials) rotates them."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Aws, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

ENV = "TERRACE_WORKLOAD_IDENTITY_KEYS_PATH"


def keys_path(stack: Stack) -> str:
    return f"/terrace/{stack.stack_name}/workload-identity"


def grant_signing_keys(stack: Stack, fn: lambda_.Function) -> None:
    """`fn` reads, creates and deletes the keys under the stack's path, and nothing else of SSM."""
    path = keys_path(stack)
    fn.add_environment(ENV, path)
    parameters = f"arn:{Aws.PARTITION}:ssm:{Aws.REGION}:{Aws.ACCOUNT_ID}:parameter{path}"
    fn.add_to_role_policy(iam.PolicyStatement(actions=["ssm:GetParametersByPath"], resources=[parameters]))
    fn.add_to_role_policy(
        iam.PolicyStatement(actions=["ssm:PutParameter", "ssm:DeleteParameter"], resources=[f"{parameters}/*"])
    )
    finding = f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:parameter{path}/*]"
    reason = "the signing keys' parameters are named by their key ids, made at rotation: only this stack's path"
    Validations.of(stack).acknowledge(Acknowledgment(id=finding, reason=reason))
