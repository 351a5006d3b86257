"""The stack's secrets, held in SSM SecureString parameters (free at rest, encrypted by the account's AWS-managed
`aws/ssm` key): the bootstrap admin token, the key that signs URLs (log-read URLs, web sessions) and, unless the
stack keeps a customer-managed KMS key (`terrace:kmsKey`), the data key sealing sensitive values. CloudFormation
cannot create SecureString parameters: the bootstrap custom resource generates each missing one on deploy and
replaces the admin token and the signing key when `terrace:rotateSecrets` changes (functions/bootstrap).
Functions get parameter ARNs, never values, and read each once per container. Runners get no secret of
Terrace's: the scaler mints each runner a token of its own organization."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

# The URL-signing key's generation: a Terrace version that finds an older one on its stack rotates the key once on
# its deploy (functions/bootstrap). 2: before it, a policy could read the events function's environment, whose role
# credentials read the key's parameter.
SIGNING_KEY_GENERATION = "2"


class Secrets(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, data_key: bool) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.prefix = f"/terrace/{stack.stack_name}"
        self.parameters = {f"{self.prefix}/admin-token": "token", f"{self.prefix}/url-signing-key": "signing-key"}
        if data_key:
            self.parameters[f"{self.prefix}/data-key"] = "data-key"
        self.arns = {
            kind: stack.format_arn(service="ssm", resource="parameter", resource_name=name.lstrip("/"))
            for name, kind in self.parameters.items()
        }
        self.admin_token_name = f"{self.prefix}/admin-token"
        self.admin_token_arn = self.arns["token"]

    def environment(self) -> dict[str, str]:
        env = {
            "TERRACE_BOOTSTRAP_SECRET_ARN": self.arns["token"],
            "TERRACE_URL_SIGNING_SECRET_ARN": self.arns["signing-key"],
        }
        if "data-key" in self.arns:
            env["TERRACE_DATA_KEY_ARN"] = self.arns["data-key"]
        return env

    def grant_read(self, grantee: iam.IGrantable, *kinds: str) -> None:
        """ssm:GetParameter on the named kinds (the aws/ssm key's policy lets the account decrypt through SSM)."""
        arns = [self.arns[k] for k in kinds if k in self.arns]
        if arns:
            iam.Grant.add_to_principal(grantee=grantee, actions=["ssm:GetParameter"], resource_arns=arns)

    def grant_bootstrap(self, grantee: iam.IGrantable) -> None:
        """The bootstrap writes (creates, rotates) and reads every parameter."""
        iam.Grant.add_to_principal(
            grantee=grantee, actions=["ssm:GetParameter", "ssm:PutParameter"], resource_arns=list(self.arns.values())
        )
