"""Background functions and their triggers; the bootstrap custom resource; who may do what."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.infra


def _statements(synth, function_path: str) -> list[dict]:
    _, fn = synth.by_path(function_path)
    role_id = fn["Properties"]["Role"]["Fn::GetAtt"][0]
    return [
        s
        for p in synth.resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def _listify(value):
    return value if isinstance(value, list) else [value]


def _actions(statements: list[dict]) -> set[str]:
    return {a for s in statements for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])}


@pytest.mark.parametrize("name", ["Scaler", "Reaper", "Events", "Bootstrap"])
def test_background_functions_are_arm64_with_the_layer(synth, name):
    _, fn = synth.by_path(f"/Functions/{name}/Resource")
    assert fn["Properties"]["Architectures"] == ["arm64"]
    assert fn["Properties"]["Layers"]
    assert fn["Properties"]["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"] == f"terrace-{name.lower()}"


@pytest.mark.parametrize("name", ["Scaler", "Reaper"])
def test_scaler_and_reaper_run_every_minute(synth, name):
    fn_id, _ = synth.by_path(f"/Functions/{name}/Resource")
    _, rule = synth.by_path(f"/Functions/{name}Schedule/Resource")
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 minute)"
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [fn_id, "Arn"]}


def test_events_function_consumes_the_events_queue_with_partial_failures(synth):
    fn_id, _ = synth.by_path("/Functions/Events/Resource")
    queue_id, _ = synth.by_path("/Queues/EventsQueue/Resource")
    [mapping] = synth.resources("AWS::Lambda::EventSourceMapping").values()
    props = mapping["Properties"]
    assert props["FunctionName"] == {"Ref": fn_id}
    assert props["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


@pytest.mark.parametrize("path", ["/Api/Handler/Resource", "/Functions/Events/Resource"])
def test_api_and_events_may_invoke_the_scaler_and_know_its_name(synth, path):
    """The api enqueues runs' jobs; the events function too, for the runs run triggers queue."""
    scaler_id, _ = synth.by_path("/Functions/Scaler/Resource")
    _, fn = synth.by_path(path)
    assert fn["Properties"]["Environment"]["Variables"]["TERRACE_SCALER_FUNCTION"] == {"Ref": scaler_id}
    invoke = [s for s in _statements(synth, path) if "lambda:InvokeFunction" in str(s["Action"])]
    assert invoke and {"Fn::GetAtt": [scaler_id, "Arn"]} in invoke[0]["Resource"]


def test_scaler_may_run_only_the_runner_task_and_pass_only_its_roles(synth):
    statements = _statements(synth, "/Functions/Scaler/Resource")
    task_id = next(iter(synth.resources("AWS::ECS::TaskDefinition")))
    [run] = [s for s in statements if s["Action"] == "ecs:RunTask"]
    assert run["Resource"] == {"Ref": task_id}
    assert "ecs:cluster" in str(run["Condition"])
    [pass_role] = [s for s in statements if s["Action"] == "iam:PassRole"]
    assert len(pass_role["Resource"]) == 2
    # it drains the priority lanes (never sends to a queue, never reads the events queue)
    sqs = [s for s in statements if any(a.startswith("sqs:") for a in _actions([s]))]
    assert "sqs:SendMessage" not in _actions(sqs) and "sqs:ReceiveMessage" in _actions(sqs)
    events_id, _ = synth.by_path("/Queues/EventsQueue/Resource")
    assert events_id not in str([s["Resource"] for s in sqs])


def test_only_the_bootstrap_function_reads_the_admin_token(synth):
    secret_id, _ = synth.by_path("/Secrets/BootstrapAdminToken/Resource")
    readers = []
    for path in ("/Api/Handler/Resource", "/Functions/Scaler/Resource", "/Functions/Reaper/Resource",
                 "/Functions/Events/Resource", "/Functions/Bootstrap/Resource"):  # fmt: skip
        if any({"Ref": secret_id} in _listify(s["Resource"]) for s in _statements(synth, path)):
            readers.append(path)
    assert readers == ["/Functions/Bootstrap/Resource"]


def test_bootstrap_custom_resource_is_backed_by_the_bootstrap_function(synth):
    fn_id, _ = synth.by_path("/Functions/Bootstrap/Resource")
    secret_id, _ = synth.by_path("/Secrets/BootstrapAdminToken/Resource")
    [resource] = synth.resources("Custom::TerraceBootstrapAdmin").values()
    props = resource["Properties"]
    assert props["ServiceToken"] == {"Fn::GetAtt": [fn_id, "Arn"]}
    assert props["Username"] == "admin"
    assert props["SecretArn"] == {"Ref": secret_id}


def test_secrets_are_generated_not_written_in_the_template(synth):
    secrets = synth.resources("AWS::SecretsManager::Secret").values()
    assert len(secrets) == 2  # the admin token, the URL-signing key: no runner secret
    for secret in secrets:
        assert "SecretString" not in secret["Properties"]
        assert secret["Properties"]["GenerateSecretString"]["PasswordLength"] >= 32
