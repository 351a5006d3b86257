"""The logs function (infra/log_reads.py): the CLI's log reads go to its own URL, not through CloudFront and the
HTTP API. The URL needs no authentication (a log-read URL is a signed capability the function checks itself), so
the function may read what a log read needs and write nothing."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from infra.settings import DeploySettings

pytestmark = pytest.mark.infra
LOGS = "/LogReads/Handler/Resource"
WRITES = ("Put", "Update", "Delete", "BatchWrite", "Write", "Send", "Invoke", "Create", "Encrypt", "GenerateDataKey")


def _statements(synth, function_path: str) -> list[dict]:
    _, fn = synth.by_path(function_path)
    role_id = fn["Properties"]["Role"]["Fn::GetAtt"][0]
    return [
        s
        for p in synth.resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict) -> list[str]:
    return statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]


def test_the_log_read_origin_is_the_logs_functions_url_without_auth(synth):
    logs_id, _ = synth.by_path(LOGS)
    [(url_id, url)] = synth.resources("AWS::Lambda::Url").items()  # the stack's only function URL
    assert url["Properties"] == {
        "AuthType": "NONE",
        "InvokeMode": "BUFFERED",
        "TargetFunctionArn": {"Fn::GetAtt": [logs_id, "Arn"]},
    }
    _, api = synth.by_path("/Api/Handler/Resource")
    assert api["Properties"]["Environment"]["Variables"]["TERRACE_LOG_READ_URL"] == {
        "Fn::GetAtt": [url_id, "FunctionUrl"]
    }
    invoke = [p["Properties"] for p in synth.resources("AWS::Lambda::Permission").values()
              if p["Properties"]["FunctionName"] == {"Fn::GetAtt": [logs_id, "Arn"]}]  # fmt: skip
    assert {p["Action"] for p in invoke} == {"lambda:InvokeFunctionUrl", "lambda:InvokeFunction"}
    assert all(p.get("FunctionUrlAuthType") == "NONE" or p.get("InvokedViaFunctionUrl") for p in invoke)


def test_the_scaler_warms_the_logs_function_up_as_it_takes_a_window_s_wake_and_the_api_does_not(synth):
    """The warm-up goes with the deployment's wake claim (`warm_window.py: take_wakes`): once a minute per
    organization, not once per API instance."""
    logs_id, _ = synth.by_path(LOGS)
    _, scaler = synth.by_path("/Functions/Scaler/Resource")
    assert scaler["Properties"]["Environment"]["Variables"]["TERRACE_LOGS_FUNCTION"] == {"Ref": logs_id}
    invokes = [s for s in _statements(synth, "/Functions/Scaler/Resource") if "lambda:InvokeFunction" in _actions(s)]
    assert [s["Resource"] for s in invokes if logs_id in str(s["Resource"])] == [{"Fn::GetAtt": [logs_id, "Arn"]}]
    _, api = synth.by_path("/Api/Handler/Resource")
    assert "TERRACE_LOGS_FUNCTION" not in api["Properties"]["Environment"]["Variables"]
    api_invokes = [s for s in _statements(synth, "/Api/Handler/Resource") if "lambda:InvokeFunction" in _actions(s)]
    assert not any(logs_id in str(s["Resource"]) for s in api_invokes), api_invokes


def test_the_logs_function_answers_at_once_and_knows_no_queue_or_other_function(synth):
    _, fn = synth.by_path(LOGS)
    variables = fn["Properties"]["Environment"]["Variables"]
    assert variables["TERRACE_LOG_READ_WAIT_S"] == "0"  # never held waiting: billed for nothing
    assert variables["POWERTOOLS_SERVICE_NAME"] == "terrace-logs"
    assert {"TERRACE_TABLE", "TERRACE_BLOB_BUCKET", "TERRACE_URL_SIGNING_SECRET_ARN"} <= set(variables)
    assert not [name for name in variables if "QUEUE" in name or "FUNCTION" in name or "ORIGIN_VERIFY" in name]
    assert "TERRACE_BOOTSTRAP_SECRET_ARN" not in variables and "TERRACE_ECS_CLUSTER" not in variables
    assert fn["Properties"]["Architectures"] == ["arm64"] and fn["Properties"]["Timeout"] <= 10


def test_the_logs_functions_role_reads_only_and_only_the_log_archives_of_the_bucket(synth):
    statements = _statements(synth, LOGS)
    actions = {a for s in statements for a in _actions(s) if not a.startswith("xray:")}  # its own trace segments
    assert not [a for a in actions if any(w in a.split(":", 1)[1] for w in WRITES)], actions
    assert {"dynamodb:GetItem", "dynamodb:Query", "s3:GetObject", "ssm:GetParameter"} <= actions
    [s3] = [s for s in statements if any(a.startswith("s3:") for a in _actions(s))]
    assert _actions(s3) == ["s3:GetObject"] and "'/logs/*'" in str(s3["Resource"])
    parameters = str([s["Resource"] for s in statements if "ssm:GetParameter" in _actions(s)])
    assert "url-signing-key" in parameters and "data-key" in parameters and "admin-token" not in parameters


def test_the_logs_function_may_open_sensitive_values_sealed_with_the_kms_key(synth_options):
    actions = {a for s in _statements(synth_options, LOGS) for a in _actions(s)}
    assert "kms:Decrypt" in actions and "kms:Encrypt" not in actions


@pytest.mark.parametrize(("value", "direct"), [(None, True), ("true", True), ("false", False)])
def test_log_reads_through_cloudfront_are_an_option(value, direct):
    app = cdk.App(context={"terrace:logReadsDirect": value} if value is not None else {})
    assert DeploySettings.from_context(app).log_reads_direct is direct
