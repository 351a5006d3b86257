"""The events queue only: jobs queue per organization in the table, not on SQS."""

from __future__ import annotations

import pytest
from terrace.adapters import definitions

from infra.queues import env_name

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
    assert env_name("events") == "TERRACE_QUEUE_URL_EVENTS"
