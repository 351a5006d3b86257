"""The lanes, their dead-letter queue and the events queue; the alarm on dead-letter depth."""

from __future__ import annotations

import pytest
from terrace.adapters import definitions

from infra.queues import env_name

pytestmark = pytest.mark.infra


def test_one_queue_per_definition_encrypted(synth):
    queues = synth.resources("AWS::SQS::Queue")
    assert len(queues) == len(definitions.QUEUES)
    assert all(q["Properties"]["SqsManagedSseEnabled"] for q in queues.values())


def test_lanes_redrive_to_the_dead_letter_queue(synth):
    dlq_id, _ = synth.by_path("/Queues/JobsDlqQueue/Resource")
    for lane in ("Apply", "Plan", "Speculative"):
        _, queue = synth.by_path(f"/Queues/Jobs{lane}Queue/Resource")
        redrive = queue["Properties"]["RedrivePolicy"]
        assert redrive == {
            "deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
            "maxReceiveCount": definitions.JOB_MAX_RECEIVES,
        }


def test_alarm_on_dead_letter_depth(synth):
    dlq_id, _ = synth.by_path("/Queues/JobsDlqQueue/Resource")
    _, alarm = synth.by_path("/Queues/DeadLetterDepthAlarm/Resource")
    props = alarm["Properties"]
    assert props["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert props["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq_id, "QueueName"]}}]
    assert props["Threshold"] == 0
    assert props["ComparisonOperator"] == "GreaterThanThreshold"


def test_every_function_knows_every_queue_url(synth):
    layer_id, _ = synth.by_path("/TerraceLayer/Resource")
    terrace_functions = [
        f
        for f in synth.resources("AWS::Lambda::Function").values()
        if {"Ref": layer_id} in f["Properties"].get("Layers", [])
    ]
    assert len(terrace_functions) == 5
    for fn in terrace_functions:
        variables = fn["Properties"]["Environment"]["Variables"]
        for queue in definitions.QUEUES:
            assert env_name(queue.logical_name) in variables
    assert env_name("jobs-apply") == "TERRACE_QUEUE_URL_JOBS_APPLY"
