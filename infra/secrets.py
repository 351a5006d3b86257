"""Secrets Manager secrets generated at deploy time: the bootstrap admin token and the key that signs URLs
(log-read URLs and the like). Functions get their ARNs and read them once per container. Runners get no
secret of Terrace's: the scaler mints each runner a token of its own organization."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct


def _generated(scope: Construct, construct_id: str, description: str) -> secretsmanager.Secret:
    return secretsmanager.Secret(
        scope,
        construct_id,
        description=description,
        generate_secret_string=secretsmanager.SecretStringGenerator(
            password_length=48, exclude_punctuation=True, include_space=False
        ),
        removal_policy=RemovalPolicy.DESTROY,
    )


class Secrets(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.bootstrap_token = _generated(self, "BootstrapAdminToken", "Terrace: API token of the site admin")
        self.url_signing = _generated(self, "UrlSigningSecret", "Terrace: HMAC key for signed URLs")

    def environment(self) -> dict[str, str]:
        return {
            "TERRACE_BOOTSTRAP_SECRET_ARN": self.bootstrap_token.secret_arn,
            "TERRACE_URL_SIGNING_SECRET_ARN": self.url_signing.secret_arn,
        }
