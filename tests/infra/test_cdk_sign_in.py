"""Single sign-on in the CDK app: a Cognito user pool wired to the API (issuer, client, secret by ARN), nothing
by default, and an existing issuer refused without its client."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack

from infra.settings import DeploySettings


def test_by_default_there_is_no_single_sign_on(synth):
    assert not synth.resources("AWS::Cognito::UserPool")
    _, fn = synth.by_path("/Api/Handler/Resource")
    assert not any(k.startswith("TERRACE_OIDC") for k in fn["Properties"]["Environment"]["Variables"])


def test_cognito_option_creates_a_pool_whose_client_calls_back_to_terrace(synth_options):
    pool = next(iter(synth_options.resources("AWS::Cognito::UserPool").values()))
    assert pool["Properties"]["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    client = next(iter(synth_options.resources("AWS::Cognito::UserPoolClient").values()))["Properties"]
    assert client["GenerateSecret"] is True and client["AllowedOAuthFlows"] == ["code"]
    assert client["CallbackURLs"] == ["https://terrace.example.com/app/sign-in/oidc/callback"]
    _, fn = synth_options.by_path("/Api/Handler/Resource")
    env = fn["Properties"]["Environment"]["Variables"]
    assert "cognito-idp" in str(env["TERRACE_OIDC_ISSUER"]) and env["TERRACE_OIDC_GROUPS_CLAIM"] == "cognito:groups"
    assert "TERRACE_OIDC_CLIENT_SECRET_ARN" in env and "TERRACE_OIDC_CLIENT_SECRET" not in env


@pytest.mark.parametrize(
    "context",
    [
        {"terrace:oidcIssuer": "https://login.example.com"},
        {
            "terrace:oidcIssuer": "https://login.example.com",
            "terrace:oidcClientId": "x",
            "terrace:oidcClientSecretArn": "arn:s",
            "terrace:cognito": "true",
        },
    ],
)
def test_an_issuer_needs_its_client_and_excludes_cognito(context):
    stack = Stack(App(context=context), "S")
    with pytest.raises(ValueError):
        DeploySettings.from_context(stack)
