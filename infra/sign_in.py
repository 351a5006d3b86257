"""Single sign-on for people in the web UI: a Cognito user pool the stack creates (`terrace:cognito=true`), or an
existing OpenID Connect issuer (`terrace:oidcIssuer`, `terrace:oidcClientId`, `terrace:oidcClientSecretArn`).
The API function gets the issuer, the client id and the ARN of the client secret, never the secret itself."""

from __future__ import annotations

from aws_cdk import Aws, Fn, RemovalPolicy, Stack
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.settings import DeploySettings

CALLBACK_PATH = "/app/sign-in/oidc/callback"  # terrace.services.access.oidc.CALLBACK_PATH


class SingleSignOn(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings, public_url: str) -> None:
        super().__init__(scope, construct_id)
        self.secret: secretsmanager.ISecret | None = None
        self._environment: dict[str, str] = {}
        if settings.cognito:
            self._cognito(settings, public_url)
        elif settings.oidc_issuer and settings.oidc_client_id and settings.oidc_client_secret_arn:
            self.secret = secretsmanager.Secret.from_secret_complete_arn(
                self, "ClientSecret", settings.oidc_client_secret_arn
            )
            self._environment = {
                "TERRACE_OIDC_ISSUER": settings.oidc_issuer,
                "TERRACE_OIDC_CLIENT_ID": settings.oidc_client_id,
                "TERRACE_OIDC_CLIENT_SECRET_ARN": settings.oidc_client_secret_arn,
                "TERRACE_OIDC_GROUPS_CLAIM": settings.oidc_groups_claim,
            }

    def _cognito(self, settings: DeploySettings, public_url: str) -> None:
        self.user_pool = cognito.UserPool(
            self,
            "Users",
            self_sign_up_enabled=False,  # an administrator invites people
            sign_in_aliases=cognito.SignInAliases(email=True, username=True),
            mfa=cognito.Mfa.REQUIRED,  # an authenticator app; people who can apply to production need two factors
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
            password_policy=cognito.PasswordPolicy(
                min_length=12, require_lowercase=True, require_uppercase=True, require_digits=True, require_symbols=True
            ),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            removal_policy=RemovalPolicy.RETAIN,  # people's accounts outlive a stack
        )
        self.user_pool.add_domain(
            "Domain",
            cognito_domain=cognito.CognitoDomainOptions(domain_prefix=domain_prefix()),
        )
        client = self.user_pool.add_client(
            "Terrace",
            generate_secret=True,
            auth_flows=cognito.AuthFlow(user_srp=True),
            o_auth=cognito.OAuthSettings(
                flows=cognito.OAuthFlows(authorization_code_grant=True),
                scopes=[cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL, cognito.OAuthScope.PROFILE],
                callback_urls=[public_url + CALLBACK_PATH],
            ),
            prevent_user_existence_errors=True,
        )
        self.secret = secretsmanager.Secret(
            self,
            "ClientSecret",
            description="Terrace: Cognito app client secret",
            secret_string_value=client.user_pool_client_secret,
        )
        region = Stack.of(self).region
        self._environment = {
            "TERRACE_OIDC_ISSUER": f"https://cognito-idp.{region}.amazonaws.com/{self.user_pool.user_pool_id}",
            "TERRACE_OIDC_CLIENT_ID": client.user_pool_client_id,
            "TERRACE_OIDC_CLIENT_SECRET_ARN": self.secret.secret_arn,
            "TERRACE_OIDC_GROUPS_CLAIM": settings.oidc_groups_claim,
        }

    def environment(self) -> dict[str, str]:
        return dict(self._environment)

    def grant_read(self, grantee: iam.IGrantable) -> None:
        if self.secret is not None:
            self.secret.grant_read(grantee)


def domain_prefix() -> str:
    """`terrace-<the stack's UUID>`: Cognito domain prefixes are global to a region across every account, so one
    derived from the construct path (the same in every account) is taken by the first deployment."""
    return Fn.join("", ["terrace-", Fn.select(2, Fn.split("/", Aws.STACK_ID))])
