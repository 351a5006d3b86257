"""The policy function: tenants' Rego is evaluated in a Lambda whose role may only write its own logs, with no
Terrace setting in its environment; the events and api functions may invoke it and name it, nothing more."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.infra
POLICY = "/Functions/Policy/Resource"


def _listify(value):
    return value if isinstance(value, list) else [value]


def _role_id(synth, function_path: str) -> str:
    _, fn = synth.by_path(function_path)
    return fn["Properties"]["Role"]["Fn::GetAtt"][0]


def _statements(synth, function_path: str) -> list[dict]:
    role_id = _role_id(synth, function_path)
    role = synth.template["Resources"][role_id]["Properties"]
    inline = [s for p in role.get("Policies", []) for s in p["PolicyDocument"]["Statement"]]
    attached = [
        s
        for p in synth.resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"].get("Roles", [])
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    return inline + attached


def test_the_policy_functions_role_may_only_write_its_own_logs(synth):
    role_id = _role_id(synth, POLICY)
    role = synth.template["Resources"][role_id]["Properties"]
    assert "ManagedPolicyArns" not in role  # not even AWS's basic execution policy (logs:* on every group)
    assert role["AssumeRolePolicyDocument"]["Statement"] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}
    ]
    [statement] = _statements(synth, POLICY)
    assert statement["Effect"] == "Allow" and "Condition" not in statement
    assert sorted(_listify(statement["Action"])) == ["logs:CreateLogStream", "logs:PutLogEvents"]
    log_group_id, _ = synth.by_path("/Functions/PolicyLogs/Resource")
    assert _listify(statement["Resource"]) == [{"Fn::GetAtt": [log_group_id, "Arn"]}]
    # and no other policy of the stack names the role (a grant made elsewhere would show here)
    policies = [p for p in synth.resources("AWS::IAM::Policy").values() if {"Ref": role_id} in p["Properties"]["Roles"]]
    assert len(policies) == 1


def test_the_policy_function_has_no_terrace_setting_in_its_environment(synth):
    _, fn = synth.by_path(POLICY)
    props = fn["Properties"]
    variables = props.get("Environment", {}).get("Variables", {})
    assert not [k for k in variables if not k.startswith("POWERTOOLS_") and k != "TERRACE_TEMPLATES_DIR"]
    text = str(variables)
    for resource in ("AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::SQS::Queue", "AWS::KMS::Key"):
        for logical_id in synth.resources(resource):
            assert logical_id not in text
    assert "parameter/" not in text and "SECRET" not in text.upper() and "KEY" not in text.upper()
    assert props["Architectures"] == ["arm64"] and props["Layers"]  # regopy's arm64 wheel is in the layer
    assert props["Handler"] == "handler.lambda_handler" and props["Timeout"] == 30 and props["MemorySize"] == 1024


@pytest.mark.parametrize("path", ["/Functions/Events/Resource", "/Api/Handler/Resource"])
def test_events_and_api_may_invoke_the_policy_function_and_know_its_name(synth, path):
    policy_id, _ = synth.by_path(POLICY)
    _, fn = synth.by_path(path)
    assert fn["Properties"]["Environment"]["Variables"]["TERRACE_POLICY_FUNCTION"] == {"Ref": policy_id}
    statements = _statements(synth, path)
    invoking = [s for s in statements if policy_id in str(s["Resource"])]
    assert [_listify(s["Action"]) for s in invoking] == [["lambda:InvokeFunction"]]


def test_only_the_events_and_api_functions_may_invoke_the_policy_function(synth):
    policy_id, _ = synth.by_path(POLICY)
    invokers = [
        roles
        for p in synth.resources("AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if policy_id in str(s["Resource"])
        for roles in [p["Properties"]["Roles"]]
    ]
    expected = [
        [{"Ref": _role_id(synth, "/Functions/Events/Resource")}],
        [{"Ref": _role_id(synth, "/Api/Handler/Resource")}],
    ]
    assert sorted(map(str, invokers)) == sorted(map(str, expected))


def _settings_of(synth, path: str):
    """The settings the function's environment gives the composition root (CloudFormation's references filled in;
    the secrets' ARNs left out: resolving them would call SSM)."""
    from terrace.config import Settings

    _, fn = synth.by_path(path)
    env = {}
    for key, value in fn["Properties"]["Environment"]["Variables"].items():
        if key.endswith("_ARN") and not isinstance(value, str):
            continue
        url = "URL" in key or "ENDPOINT" in key
        env[key] = value if isinstance(value, str) else (f"https://{key.lower()}.example.com" if url else "ref")
    assert env.get("TERRACE_POLICY_FUNCTION") == "ref"
    return Settings.from_env({**env, "AWS_REGION": "us-east-1"})


@pytest.mark.parametrize("path", ["/Functions/Events/Resource", "/Api/Handler/Resource"])
def test_the_events_and_api_functions_parse_uploaded_hcl_in_the_policy_function(synth, path, monkeypatch):
    """The composition root of either function, on its own environment: an uploaded module's HCL and a policy set's
    policies.hcl go to the policy function (its role: its own logs), never to a child beside the function's role."""
    from terrace import bootstrap
    from terrace.adapters.lambda_hcl_reader import LambdaHclReader
    from terrace.adapters.lambda_policy_engine import LambdaPolicyEngine

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    container = bootstrap.build_aws(_settings_of(synth, path))
    assert isinstance(container.hcl_reader, LambdaHclReader) and container.hcl_reader._function == "ref"
    assert isinstance(container.remote_policy_engine, LambdaPolicyEngine)
    assert container.module_versions._hcl is container.hcl_reader
