"""Background functions and their triggers; the bootstrap custom resource; who may do what."""

from __future__ import annotations

import pytest

from infra.secrets import SIGNING_KEY_GENERATION

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


@pytest.mark.parametrize(("name", "rate"), [("Scaler", "rate(5 minutes)"), ("Reaper", "rate(1 minute)")])
def test_scaler_every_5_minutes_as_a_backstop_and_reaper_every_minute(synth, name, rate):
    fn_id, _ = synth.by_path(f"/Functions/{name}/Resource")
    _, rule = synth.by_path(f"/Functions/{name}Schedule/Resource")
    assert rule["Properties"]["ScheduleExpression"] == rate
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [fn_id, "Arn"]}


def test_events_function_consumes_the_events_queue_with_partial_failures(synth):
    fn_id, _ = synth.by_path("/Functions/Events/Resource")
    queue_id, _ = synth.by_path("/Queues/EventsQueue/Resource")
    [mapping] = synth.resources("AWS::Lambda::EventSourceMapping").values()
    props = mapping["Properties"]
    assert props["FunctionName"] == {"Ref": fn_id}
    assert props["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


@pytest.mark.parametrize("path", ["/Api/Handler/Resource", "/Functions/Events/Resource", "/Functions/Reaper/Resource"])
def test_what_sends_to_the_lanes_may_invoke_the_scaler_and_knows_its_name(synth, path):
    """The api enqueues runs' jobs; the events function too, for the runs run triggers queue; the reaper resends a
    queued phase whose message was lost: each message sent wakes the scaler (`adapters/kicking_lanes.py`)."""
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


FUNCTIONS = ("/Api/Handler/Resource", "/Functions/Scaler/Resource", "/Functions/Reaper/Resource",
             "/Functions/Events/Resource", "/Functions/Bootstrap/Resource")  # fmt: skip


def _readers(synth, parameter: str, action: str = "ssm:GetParameter") -> list[str]:
    return [
        path
        for path in FUNCTIONS
        if any(
            action in _listify(s["Action"]) and f"parameter/terrace/Terrace/{parameter}" in str(s["Resource"])
            for s in _statements(synth, path)
        )  # fmt: skip
    ]


def test_only_the_bootstrap_function_reads_or_writes_the_admin_token(synth):
    assert _readers(synth, "admin-token") == ["/Functions/Bootstrap/Resource"]
    assert _readers(synth, "admin-token", "ssm:PutParameter") == ["/Functions/Bootstrap/Resource"]


def test_the_data_key_is_read_by_the_functions_that_seal_or_open_values_only(synth):
    assert "/Functions/Scaler/Resource" not in _readers(synth, "data-key")
    assert set(_readers(synth, "data-key")) == set(FUNCTIONS) - {"/Functions/Scaler/Resource"}
    _, scaler = synth.by_path("/Functions/Scaler/Resource")
    assert scaler["Properties"]["Environment"]["Variables"]["TERRACE_DATA_KEY_ARN"] == ""
    assert set(_readers(synth, "url-signing-key")) == set(FUNCTIONS)


def test_bootstrap_custom_resource_is_backed_by_the_bootstrap_function(synth):
    fn_id, _ = synth.by_path("/Functions/Bootstrap/Resource")
    [resource] = synth.resources("Custom::TerraceBootstrapAdmin").values()
    props = resource["Properties"]
    assert props["ServiceToken"] == {"Fn::GetAtt": [fn_id, "Arn"]}
    assert props["Username"] == "admin"
    assert "parameter/terrace/Terrace/admin-token" in str(props["SecretArn"])
    assert props["Parameters"] == {
        "/terrace/Terrace/admin-token": "token",
        "/terrace/Terrace/url-signing-key": "signing-key",
        "/terrace/Terrace/data-key": "data-key",
    }
    assert props["Rotation"] == "" and props["SigningKeyGeneration"] == SIGNING_KEY_GENERATION
    # the functions' new code starts once the bootstrap has rotated the URL-signing key (a new generation)
    bootstrap_id, _ = synth.by_path("/Functions/BootstrapAdmin/Default")
    for path in ("/Api/Handler/Resource", "/Functions/Scaler/Resource", "/Functions/Reaper/Resource",
                 "/Functions/Events/Resource"):  # fmt: skip
        assert bootstrap_id in synth.by_path(path)[1].get("DependsOn", []), path


def test_secrets_cost_nothing_at_rest_and_are_generated_not_written_in_the_template(synth, synth_options):
    """No Secrets Manager secret ($0.40 a month each) and no value in the template: the bootstrap generates SSM
    SecureString parameters; a Cognito client secret (an option) is the one Secrets Manager secret."""
    assert not synth.resources("AWS::SecretsManager::Secret")
    assert not synth.resources("AWS::SSM::Parameter")
    assert len(synth_options.resources("AWS::SecretsManager::Secret")) == 1


def test_rotate_secrets_context_reaches_the_bootstrap(synth_variants):
    rotated = synth_variants  # terrace:rotateSecrets=2026-11
    [resource] = rotated.resources("Custom::TerraceBootstrapAdmin").values()
    assert resource["Properties"]["Rotation"] == "2026-11"
    [origin] = rotated.resources("Custom::TerraceOriginVerify").values()
    assert origin["Properties"]["Rotation"] == "2026-11"


def test_a_runner_task_that_stops_wakes_the_scaler(synth):
    """Its slot is free: the phases that waited for room get a runner now, not at the scaler's next schedule."""
    scaler_id, _ = synth.by_path("/Functions/Scaler/Resource")
    cluster_id, _ = synth.by_path("/Runner/Cluster/Resource")
    _, rule = synth.by_path("/Functions/RunnerStopped/Resource")
    pattern = rule["Properties"]["EventPattern"]
    assert pattern["source"] == ["aws.ecs"] and pattern["detail-type"] == ["ECS Task State Change"]
    assert pattern["detail"] == {"clusterArn": [{"Fn::GetAtt": [cluster_id, "Arn"]}], "lastStatus": ["STOPPED"]}
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [scaler_id, "Arn"]}
    permissions = [
        r["Properties"]
        for r in synth.resources("AWS::Lambda::Permission").values()
        if r["Properties"]["Principal"] == "events.amazonaws.com"
        and r["Properties"]["FunctionName"] == {"Fn::GetAtt": [scaler_id, "Arn"]}
    ]
    assert len(permissions) == 2  # its schedule and this rule


def test_the_tool_catalog_is_synced_daily_by_a_function_that_may_only_use_the_table(synth):
    """`terrace tools sync` on AWS: an EventBridge rule once a day invokes `functions/tools_sync/handler.py`, whose
    role reads and writes the table and nothing else of the stack (no secret, bucket, queue or key)."""
    fn_id, fn = synth.by_path("/Functions/ToolsSync/Resource")
    _, rule = synth.by_path("/Functions/ToolsSyncSchedule/Resource")
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 day)"
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [fn_id, "Arn"]}
    variables = fn["Properties"]["Environment"]["Variables"]
    assert variables["POWERTOOLS_SERVICE_NAME"] == "terrace-tools_sync" and fn["Properties"]["Architectures"] == [
        "arm64"
    ]
    assert variables["TERRACE_URL_SIGNING_SECRET_ARN"] == "" and variables["TERRACE_BOOTSTRAP_SECRET_ARN"] == ""
    assert variables.get("TERRACE_DATA_KEY_ARN", "") == ""
    actions = _actions(_statements(synth, "/Functions/ToolsSync/Resource"))
    assert {"dynamodb:PutItem", "dynamodb:Query"} <= actions
    assert not {a for a in actions if a.split(":")[0] in ("ssm", "s3", "sqs", "kms", "secretsmanager", "lambda")}
