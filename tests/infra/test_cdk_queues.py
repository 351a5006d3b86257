"""The events queue and the three priority lanes, each lane with its dead-letter queue: run phases travel to the
scaler (the dispatcher) on SQS; runners never read it."""

from __future__ import annotations

import pytest
from terrace.adapters import definitions

from infra.queues import env_name

LOGS = "/LogReads/Handler/Resource"  # the logs function (infra/log_reads.py)

pytestmark = pytest.mark.infra


def test_one_queue_per_definition_encrypted(synth):
    queues = synth.resources("AWS::SQS::Queue")
    assert len(queues) == len(definitions.QUEUES)
    assert all(q["Properties"]["SqsManagedSseEnabled"] for q in queues.values())


def test_the_events_queue_parks_poison_messages_in_its_dead_letter_queue(synth):
    dlq_id, dlq = synth.by_path("/Queues/EventsDlqQueue/Resource")
    _, events = synth.by_path("/Queues/EventsQueue/Resource")
    policy = events["Properties"]["RedrivePolicy"]
    assert policy == {"deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]}, "maxReceiveCount": 20}
    assert dlq["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600


def _queue_id(synth, path: str) -> str:
    logical_id, _ = synth.by_path(f"/Queues/{path}/Resource")
    return logical_id


def test_three_priority_lanes_each_with_a_dead_letter_queue(synth):
    assert [q.logical_name for q in definitions.LANE_QUEUES] == ["lane-apply", "lane-plan", "lane-speculative"]
    paths = {q["Metadata"]["aws:cdk:path"].split("/", 1)[1] for q in synth.resources("AWS::SQS::Queue").values()}
    assert paths == {"Queues/EventsQueue/Resource", "Queues/EventsDlqQueue/Resource"} | {
        f"Queues/Lane{lane.capitalize()}{suffix}Queue/Resource"
        for lane in definitions.LANE_PRIORITY
        for suffix in ("", "Dlq")
    }
    queues = synth.resources("AWS::SQS::Queue")
    for lane in definitions.LANE_PRIORITY:
        properties = queues[_queue_id(synth, f"Lane{lane.capitalize()}Queue")]["Properties"]
        redrive = properties["RedrivePolicy"]
        assert redrive["maxReceiveCount"] == definitions.LANE_MAX_RECEIVES
        assert redrive["deadLetterTargetArn"]["Fn::GetAtt"][0] == _queue_id(synth, f"Lane{lane.capitalize()}DlqQueue")


def _actions_on(synth, role_path: str, queue_id: str) -> set[str]:
    found: set[str] = set()
    for policy in synth.resources("AWS::IAM::Policy").values():
        roles = str(policy["Properties"].get("Roles", []))
        if role_path not in roles:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if queue_id in str(statement.get("Resource")):
                actions = statement["Action"]
                found.update([actions] if isinstance(actions, str) else actions)
    return found


def test_the_scaler_drains_the_lanes_and_the_api_sends_to_them(synth):
    scaler_role = next(k for k in synth.resources("AWS::IAM::Role") if k.startswith("FunctionsScaler"))
    api_role = next(
        k for k in synth.resources("AWS::IAM::Role") if k.startswith("ApiHandler") or k.startswith("ApiApi")
    )
    for lane in definitions.LANE_PRIORITY:
        queue_id = _queue_id(synth, f"Lane{lane.capitalize()}Queue")
        assert {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"} <= _actions_on(
            synth, scaler_role, queue_id
        )
        assert "sqs:SendMessage" in _actions_on(synth, api_role, queue_id)


def test_every_function_knows_every_queue_url(synth):
    """Every function of the layer but the policy function, which knows nothing (test_cdk_policy_function.py), and
    the logs function, which knows no queue (test_cdk_log_reads.py)."""
    layer_id, _ = synth.by_path("/TerraceLayer/Resource")
    _, logs = synth.by_path(LOGS)
    terrace_functions = [
        f
        for f in synth.resources("AWS::Lambda::Function").values()
        if {"Ref": layer_id} in f["Properties"].get("Layers", [])
        and not f["Metadata"]["aws:cdk:path"].endswith("/Functions/Policy/Resource")
        and f is not logs
    ]
    assert len(terrace_functions) == 6  # api, scaler, reaper, events, bootstrap, tools_sync
    for fn in terrace_functions:
        variables = fn["Properties"]["Environment"]["Variables"]
        for queue in definitions.QUEUES:
            assert env_name(queue.logical_name) in variables
    assert env_name("events") == "TERRACE_QUEUE_URL_EVENTS"
