"""The audit trail's daily export against DynamoDB and S3 on a moto server (what the reaper Lambda runs on AWS): the
day's object in the bucket equals the API's events of the day, and writing the day again gives the same object;
the CloudWatch Logs sink of TERRACE_AUDIT_LOG_GROUP."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import boto3
from aws import REGION, clients, create_table_and_bucket
from terrace.adapters.cloudwatch_log_sink import CloudWatchLogSink, batches
from terrace.adapters.dynamo_table import DynamoTable
from terrace.adapters.s3_blobs import S3Blobs
from terrace.bootstrap import Container
from terrace.config import Settings
from terrace.services.audit.export import object_key

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from audit_helpers import day_of_actions, today  # noqa: E402


def test_the_export_on_dynamodb_and_s3(endpoint: str) -> None:
    made = clients(endpoint)
    created = create_table_and_bucket(made)
    settings = Settings(
        table_name=created.table_name, blob_bucket=created.bucket, url_signing_secret="s", aws_endpoint_url=endpoint
    )
    container = Container(
        settings=settings,
        table=DynamoTable(made["dynamodb"], created.table_name),
        blobs=S3Blobs(made["s3"], created.bucket),
    )
    env = day_of_actions(container)
    container.reaper.reap_once()
    key = object_key("acme", today())
    first = made["s3"].get_object(Bucket=created.bucket, Key=key)
    assert first["ContentType"] == "application/x-ndjson"
    assert env.exported("acme", today()) == env.api_day("/api/v2/organizations/acme/audit-trail", today())
    # a second export of the day rewrites the same objects: acme's and the site's (which holds acme's creation)
    assert container.audit_export.export_day(today())[0] == 2
    again = made["s3"].get_object(Bucket=created.bucket, Key=key)["Body"].read()
    assert again == first["Body"].read()


def test_the_cloudwatch_log_sink_creates_the_stream_once_and_keeps_the_order(endpoint: str) -> None:
    """The sink the export uses with TERRACE_AUDIT_LOG_GROUP: a stream per organization made on first use (an
    existing one is fine), the lines in order; batches keep PutLogEvents' limits."""
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION)
    client = session.client("logs", endpoint_url=endpoint)
    client.create_log_group(logGroupName="terrace-audit")
    sink = CloudWatchLogSink(client, "terrace-audit")
    start = int(time.time() * 1000) - 60_000
    sink.send("acme", [(start + n, json.dumps({"n": n})) for n in range(3)])
    CloudWatchLogSink(client, "terrace-audit").send("acme", [(start + 3, json.dumps({"n": 3}))])  # stream exists
    got = client.get_log_events(logGroupName="terrace-audit", logStreamName="acme", startFromHead=True)["events"]
    assert [json.loads(e["message"])["n"] for e in got] == [0, 1, 2, 3]
    many = [(start, "x" * 200_000)] * 12  # 2.4 MB: three calls of at most 1 MiB
    assert [len(b) for b in batches(many)] == [5, 5, 2]
    assert [len(b) for b in batches([(start, "y")] * 10_001)] == [10_000, 1]
    assert [len(b) for b in batches([(start, "a"), (start + 25 * 3600 * 1000, "b")])] == [1, 1]
