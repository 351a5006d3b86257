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


def test_no_job_lanes_or_their_dead_letter_queue(synth):
    assert [q.logical_name for q in definitions.QUEUES] == ["events"]
    paths = {q["Metadata"]["aws:cdk:path"].split("/", 1)[1] for q in synth.resources("AWS::SQS::Queue").values()}
    assert paths == {"Queues/EventsQueue/Resource"}
    assert not synth.resources("AWS::CloudWatch::Alarm") or all(
        "dead-letter" not in str(a["Properties"].get("AlarmDescription", ""))
        for a in synth.resources("AWS::CloudWatch::Alarm").values()
    )


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
