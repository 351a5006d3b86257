"""create_resources seeds moto with exactly what terrace.adapters.definitions declares."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote_plus

import pytest
from terrace.adapters import definitions as defs
from terrace.config import Settings
from terrace.local import moto_twin
from terrace.wiring.local_resources import LocalResources, create_resources, local_clients


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_twin.running() as url:
        yield url


@pytest.fixture(scope="module")
def seeded(endpoint: str) -> tuple[str, LocalResources, dict[str, Any]]:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    return prefix, create_resources(endpoint, prefix), local_clients(endpoint)


def test_one_table_with_keys_index_and_ttl(seeded):
    prefix, resources, clients = seeded
    ddb = clients["dynamodb"]
    tables = [t for t in ddb.list_tables()["TableNames"] if t.startswith(prefix + "-")]
    assert tables == [defs.physical_name(prefix, defs.TABLE.logical_name)] == [resources.table_name]

    table = ddb.describe_table(TableName=resources.table_name)["Table"]
    assert {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]} == {
        defs.TABLE.partition_key.name: "HASH",
        defs.TABLE.sort_key.name: "RANGE",
    }
    indexes = {i["IndexName"]: i for i in table["GlobalSecondaryIndexes"]}
    assert set(indexes) == {i.name for i in defs.TABLE.global_indexes} == {"gsi1"}
    gsi1 = indexes["gsi1"]
    assert [k["AttributeName"] for k in gsi1["KeySchema"]] == ["gsi1pk", "gsi1sk"]
    assert gsi1["Projection"]["ProjectionType"] == "ALL"
    ttl = ddb.describe_time_to_live(TableName=resources.table_name)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": defs.TABLE.ttl_attribute}


def test_buckets_with_versioning_as_declared(seeded):
    prefix, resources, clients = seeded
    s3 = clients["s3"]
    names = {b["Name"] for b in s3.list_buckets()["Buckets"] if b["Name"].startswith(prefix + "-")}
    assert (
        names == {defs.physical_name(prefix, b.logical_name) for b in defs.BUCKETS} == set(resources.buckets.values())
    )
    for bucket in defs.BUCKETS:
        status = s3.get_bucket_versioning(Bucket=resources.buckets[bucket.logical_name]).get("Status")
        assert (status == "Enabled") is bucket.versioned, bucket.logical_name


def test_the_events_queue_and_the_priority_lanes_with_their_dead_letters(seeded):
    prefix, resources, clients = seeded
    sqs = clients["sqs"]
    urls = sqs.list_queues(QueueNamePrefix=prefix + "-")["QueueUrls"]
    names = {q.logical_name for q in defs.QUEUES}
    assert names == {"events", "events-dlq"} | {
        f"lane-{lane}{dlq}" for lane in defs.LANE_PRIORITY for dlq in ("", "-dlq")
    }
    assert sorted(u.rsplit("/", 1)[1] for u in urls) == sorted(defs.physical_name(prefix, n) for n in names)
    assert set(resources.queue_urls) == names
    attrs = sqs.get_queue_attributes(QueueUrl=resources.queue_urls["events"], AttributeNames=["All"])["Attributes"]
    assert int(attrs["VisibilityTimeout"]) == defs.EVENTS_QUEUE.visibility_timeout_s
    redrive = json.loads(attrs["RedrivePolicy"])
    assert int(redrive["maxReceiveCount"]) == 20 and redrive["deadLetterTargetArn"].endswith("-events-dlq")
    for lane in defs.LANE_QUEUES:
        url = resources.queue_urls[lane.logical_name]
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        redrive = json.loads(attrs["RedrivePolicy"])
        assert redrive["deadLetterTargetArn"].endswith(defs.physical_name(prefix, f"{lane.logical_name}-dlq"))
        assert int(redrive["maxReceiveCount"]) == defs.LANE_MAX_RECEIVES


def test_state_and_configuration_objects_landing_in_the_blob_bucket_notify_the_events_queue(seeded):
    """`defs.STATE_LANDED`, `defs.CONFIG_LANDED`: the notifications that finalize a two-step state upload and a
    configuration version's archive (on AWS, `infra/stack.py`); other keys notify nothing."""
    _, resources, clients = seeded
    s3, sqs, url = clients["s3"], clients["sqs"], resources.queue_urls["events"]
    bucket = resources.buckets[defs.BLOB_BUCKET.logical_name]
    sqs.purge_queue(QueueUrl=url)  # S3's s3:TestEvent
    s3.put_object(Bucket=bucket, Key="plans/ws-1/run-1.json", Body=b"x")  # not under state/ or config/
    s3.put_object(Bucket=bucket, Key="config/ws-1/cv-1.tar.gz", Body=b"x")
    s3.put_object(Bucket=bucket, Key="state/ws-1/sv-1.tfstate", Body=b"{}")
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    keys = [unquote_plus(r["s3"]["object"]["key"]) for m in messages for r in json.loads(m["Body"])["Records"]]
    assert sorted(keys) == ["config/ws-1/cv-1.tar.gz", "state/ws-1/sv-1.tfstate"]


def test_kms_key_usable(seeded):
    _, resources, clients = seeded
    kms = clients["kms"]
    sealed = kms.encrypt(KeyId=resources.kms_key_id, Plaintext=b"secret")["CiphertextBlob"]
    assert kms.decrypt(CiphertextBlob=sealed)["Plaintext"] == b"secret"


def test_resources_feed_settings_directly_and_through_the_environment(seeded, endpoint):
    _, resources, _ = seeded
    direct = Settings(**resources.settings_fields())
    from_env = Settings.from_env({**resources.env(), "TERRACE_AWS_ENDPOINT_URL": endpoint})
    assert direct.table_name == from_env.table_name == resources.table_name
    assert direct.blob_bucket == from_env.blob_bucket == resources.buckets["blobs"]
    assert direct.queue_urls == from_env.queue_urls == resources.queue_urls
    assert direct.kms_key_id == from_env.kms_key_id == resources.kms_key_id
