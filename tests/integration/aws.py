"""Test-only helpers: a moto server (the local AWS twin, `local/moto_twin.py`) and the table/bucket of
adapters/definitions.py created in it."""

from __future__ import annotations

import functools
import io
import tarfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from terrace.adapters import definitions as defs
from terrace.local import moto_twin

REGION = "us-east-1"


@contextmanager
def moto_server() -> Iterator[str]:
    """The twin (DynamoDB one request at a time, presigned URLs checked), its endpoint URL."""
    with moto_twin.running() as endpoint:
        yield endpoint


def clients(endpoint: str) -> dict[str, Any]:
    """DynamoDB and S3 clients of the twin at `endpoint`: made once per endpoint and process (a client loads its
    service's model, a tenth of a second of CPU), shared by the tests that ask (boto3 clients are thread-safe and
    hold no state of a test's)."""
    return dict(_clients(endpoint))


@functools.lru_cache(maxsize=8)
def _clients(endpoint: str) -> dict[str, Any]:
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION)
    s3_config = Config(signature_version="s3v4", s3={"addressing_style": "path"})
    return {
        "dynamodb": session.client("dynamodb", endpoint_url=endpoint),
        "s3": session.client("s3", endpoint_url=endpoint, config=s3_config),
    }


@dataclass(frozen=True)
class Created:
    table_name: str
    bucket: str


def create_table_and_bucket(made: dict[str, Any], prefix: str | None = None) -> Created:
    prefix = prefix or "t" + uuid.uuid4().hex[:8]
    table = defs.TABLE
    keys = [
        table.partition_key,
        table.sort_key,
        *(k for i in table.global_indexes for k in (i.partition_key, i.sort_key)),
    ]
    name = defs.physical_name(prefix, table.logical_name)
    made["dynamodb"].create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": k.name, "AttributeType": k.type} for k in {k.name: k for k in keys}.values()
        ],
        KeySchema=[
            {"AttributeName": table.partition_key.name, "KeyType": "HASH"},
            {"AttributeName": table.sort_key.name, "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": i.name,
                "Projection": {"ProjectionType": "ALL"},
                "KeySchema": [
                    {"AttributeName": i.partition_key.name, "KeyType": "HASH"},
                    {"AttributeName": i.sort_key.name, "KeyType": "RANGE"},
                ],
            }
            for i in table.global_indexes
        ],
    )
    bucket = defs.physical_name(prefix, defs.BLOB_BUCKET.logical_name)
    made["s3"].create_bucket(Bucket=bucket)
    if defs.BLOB_BUCKET.versioned:
        made["s3"].put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    return Created(name, bucket)


def config_archive() -> bytes:
    """A configuration version's archive: one main.tf with one output."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        data = b'output "x" { value = 1 }'
        info = tarfile.TarInfo("main.tf")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()
