"""The table, buckets and queues in the template are the ones local mode creates (moto, same definitions)."""

from __future__ import annotations

import pytest
from terrace.adapters import definitions

pytestmark = pytest.mark.infra


@pytest.fixture(scope="module")
def local():
    import boto3
    from moto import mock_aws
    from terrace.wiring.local_resources import create_resources

    with mock_aws():
        session = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1")
        clients = {name: session.client(name) for name in ("dynamodb", "s3", "sqs", "kms")}
        created = create_resources(clients, "parity")
        table = clients["dynamodb"].describe_table(TableName=created.table_name)["Table"]
        ttl = clients["dynamodb"].describe_time_to_live(TableName=created.table_name)["TimeToLiveDescription"]
        versioning = {
            logical: clients["s3"].get_bucket_versioning(Bucket=name).get("Status")
            for logical, name in created.buckets.items()
        }
        queues = {
            logical: clients["sqs"].get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
            for logical, url in created.queue_urls.items()
        }
        notifications = {
            logical: clients["s3"].get_bucket_notification_configuration(Bucket=name).get("QueueConfigurations", [])
            for logical, name in created.buckets.items()
        }
        yield {"table": table, "ttl": ttl, "versioning": versioning, "queues": queues, "notifications": notifications}


def _queue_construct(logical_name: str) -> str:
    return "".join(part.capitalize() for part in logical_name.split("-")) + "Queue"


def test_table_keys_indexes_and_ttl_match(synth, local):
    [table] = synth.resources("AWS::DynamoDB::GlobalTable").values()
    props = table["Properties"]
    assert props["KeySchema"] == local["table"]["KeySchema"]
    assert sorted(props["AttributeDefinitions"], key=str) == sorted(local["table"]["AttributeDefinitions"], key=str)
    cdk_indexes = {
        (g["IndexName"], str(g["KeySchema"]), g["Projection"]["ProjectionType"])
        for g in props["GlobalSecondaryIndexes"]
    }
    local_indexes = {
        (g["IndexName"], str(g["KeySchema"]), g["Projection"]["ProjectionType"])
        for g in local["table"]["GlobalSecondaryIndexes"]
    }
    assert cdk_indexes == local_indexes
    assert props["TimeToLiveSpecification"]["AttributeName"] == local["ttl"]["AttributeName"]
    assert local["table"]["BillingModeSummary"]["BillingMode"] == props["BillingMode"]


def test_buckets_match(synth, local):
    for bucket in definitions.BUCKETS:
        _, resource = synth.by_path(f"/Data/{bucket.logical_name.capitalize()}Bucket/Resource")
        cdk_versioned = resource["Properties"].get("VersioningConfiguration", {}).get("Status") == "Enabled"
        assert cdk_versioned == (local["versioning"][bucket.logical_name] == "Enabled"), bucket.logical_name


def test_queues_match(synth, local):
    assert set(local["queues"]) == {q.logical_name for q in definitions.QUEUES}
    for logical_name, attributes in local["queues"].items():
        _, queue = synth.by_path(f"/Queues/{_queue_construct(logical_name)}/Resource")
        props = queue["Properties"]
        assert props["VisibilityTimeout"] == int(attributes["VisibilityTimeout"]), logical_name
        assert props["MessageRetentionPeriod"] == int(attributes["MessageRetentionPeriod"]), logical_name
        if "RedrivePolicy" in attributes:
            import json

            local_redrive = json.loads(attributes["RedrivePolicy"])
            target = local_redrive["deadLetterTargetArn"].rsplit(":", 1)[1].removeprefix("parity-")
            dlq_id, _ = synth.by_path(f"/Queues/{_queue_construct(target)}/Resource")
            assert props["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": [dlq_id, "Arn"]}
            assert props["RedrivePolicy"]["maxReceiveCount"] == int(local_redrive["maxReceiveCount"])
        else:
            assert "RedrivePolicy" not in props, logical_name


def test_blob_notifications_match(synth, local):
    """A state upload or a configuration archive landing in the blob bucket notifies the events queue, on AWS as on
    moto."""
    for bucket in definitions.BUCKETS:
        _, resource = synth.by_path(f"/Data/{bucket.logical_name.capitalize()}Bucket/Resource")
        cdk = resource["Properties"].get("NotificationConfiguration", {}).get("QueueConfigurations", [])
        cdk_shape = sorted((c["Event"], c["Filter"]["S3Key"]["Rules"][0]["Value"]) for c in cdk)
        local_shape = sorted(
            (event, rule["Value"])
            for c in local["notifications"][bucket.logical_name]
            for event in c["Events"]
            for rule in c["Filter"]["Key"]["FilterRules"]
        )
        wanted = sorted(
            ("s3:ObjectCreated:*", n.prefix) for n in definitions.NOTIFICATIONS if n.bucket == bucket.logical_name
        )
        assert cdk_shape == local_shape == wanted, bucket.logical_name
    _, blobs = synth.by_path(f"/Data/{definitions.BLOB_BUCKET.logical_name.capitalize()}Bucket/Resource")
    queue_configs = blobs["Properties"]["NotificationConfiguration"]["QueueConfigurations"]
    queue_id, _ = synth.by_path("/Queues/EventsQueue/Resource")
    policy_id, policy = synth.by_path("/Queues/EventsQueue/Policy/Resource")
    assert len(queue_configs) == len(definitions.NOTIFICATIONS)
    assert all(c["Queue"] == {"Fn::GetAtt": [queue_id, "Arn"]} for c in queue_configs)
    assert policy_id in blobs["DependsOn"]  # S3 checks it may send when the notification is configured
    assert any(
        st.get("Principal") == {"Service": "s3.amazonaws.com"} and st["Action"] == "sqs:SendMessage"
        for st in policy["Properties"]["PolicyDocument"]["Statement"]
    )
