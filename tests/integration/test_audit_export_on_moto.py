"""The audit trail's daily export against DynamoDB and S3 on a moto server (what the reaper Lambda runs on AWS): the
day's object in the bucket equals the API's events of the day, and writing the day again gives the same object."""

from __future__ import annotations

import sys
from pathlib import Path

from aws import clients, create_table_and_bucket
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
    assert container.audit_export.export_day(today())[0] == 1
    again = made["s3"].get_object(Bucket=created.bucket, Key=key)["Body"].read()
    assert again == first["Body"].read()
