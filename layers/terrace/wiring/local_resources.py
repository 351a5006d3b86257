"""Seed the local AWS twin (moto server) with the resources of terrace.adapters.definitions.

The CDK app builds the same table, buckets and queues on AWS from the same definitions, so the
two cannot drift. It talks to boto3 directly because it plays the part CloudFormation plays on AWS; like
`aws_adapters.py` it is wiring (used by `terrace.local.stack`), so boto3 stays in `adapters/` and `wiring/`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from terrace.adapters import definitions as defs

LOCAL_REGION = "us-east-1"


@dataclass(frozen=True)
class LocalResources:
    """Physical names of everything created; `settings_fields()` feeds terrace.config.Settings."""

    table_name: str
    buckets: dict[str, str]  # logical name -> bucket name
    queue_urls: dict[str, str]  # logical name -> queue URL
    kms_key_id: str

    def settings_fields(self) -> dict[str, Any]:
        return {
            "table_name": self.table_name,
            "blob_bucket": self.buckets[defs.BLOB_BUCKET.logical_name],
            "queue_urls": dict(self.queue_urls),
            "kms_key_id": self.kms_key_id,
        }

    def env(self) -> dict[str, str]:
        """The same facts as TERRACE_* variables, as Settings.from_env() reads them."""
        env = {
            "TERRACE_TABLE": self.table_name,
            "TERRACE_BLOB_BUCKET": self.buckets[defs.BLOB_BUCKET.logical_name],
            "TERRACE_KMS_KEY_ID": self.kms_key_id,
        }
        for logical, url in self.queue_urls.items():
            env["TERRACE_QUEUE_URL_" + logical.upper().replace("-", "_")] = url
        return env


def local_clients(endpoint_url: str, region: str = LOCAL_REGION) -> dict[str, Any]:
    """boto3 clients for the moto server (dummy credentials: moto accepts any)."""
    import boto3
    from botocore.config import Config

    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=region)
    s3_config = Config(signature_version="s3v4", s3={"addressing_style": "path"})
    return {
        "dynamodb": session.client("dynamodb", endpoint_url=endpoint_url),
        "s3": session.client("s3", endpoint_url=endpoint_url, config=s3_config),
        "sqs": session.client("sqs", endpoint_url=endpoint_url),
        "kms": session.client("kms", endpoint_url=endpoint_url),
    }


def create_resources(clients_or_endpoint: str | Mapping[str, Any], prefix: str) -> LocalResources:
    """Create the table, buckets, queues and KMS key of definitions.py, named `<prefix>-<logical>`."""
    clients = local_clients(clients_or_endpoint) if isinstance(clients_or_endpoint, str) else clients_or_endpoint
    table_name = _create_table(clients["dynamodb"], defs.TABLE, prefix)
    buckets = {b.logical_name: _create_bucket(clients["s3"], b, prefix) for b in defs.BUCKETS}
    queue_urls = _create_queues(clients["sqs"], prefix)
    _notify(clients["s3"], clients["sqs"], buckets, queue_urls)
    key = clients["kms"].create_key(Description=f"{prefix} sensitive variables")["KeyMetadata"]["KeyId"]
    return LocalResources(table_name=table_name, buckets=buckets, queue_urls=queue_urls, kms_key_id=key)


def _create_table(dynamodb: Any, table: defs.TableDefinition, prefix: str) -> str:
    name = defs.physical_name(prefix, table.logical_name)
    keys = [table.partition_key, table.sort_key]
    for index in table.global_indexes:
        keys += [index.partition_key, index.sort_key]
    attributes = {k.name: k.type for k in keys}
    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": t} for n, t in attributes.items()],
        KeySchema=[
            {"AttributeName": table.partition_key.name, "KeyType": "HASH"},
            {"AttributeName": table.sort_key.name, "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": index.name,
                "KeySchema": [
                    {"AttributeName": index.partition_key.name, "KeyType": "HASH"},
                    {"AttributeName": index.sort_key.name, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
            for index in table.global_indexes
        ],
    )
    dynamodb.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute}
    )
    return name


def _create_bucket(s3: Any, bucket: defs.BucketDefinition, prefix: str) -> str:
    name = defs.physical_name(prefix, bucket.logical_name)
    s3.create_bucket(Bucket=name)
    if bucket.versioned:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


def _notify(s3: Any, sqs: Any, buckets: dict[str, str], queue_urls: dict[str, str]) -> None:
    """The buckets' event notifications of definitions.py (on AWS: `infra/stack.py`)."""
    for bucket in defs.BUCKETS:
        wanted = [n for n in defs.NOTIFICATIONS if n.bucket == bucket.logical_name]
        if not wanted:
            continue
        configurations = [
            {
                "QueueArn": sqs.get_queue_attributes(QueueUrl=queue_urls[n.queue], AttributeNames=["QueueArn"])[
                    "Attributes"
                ]["QueueArn"],
                "Events": ["s3:ObjectCreated:*"],
                "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": n.prefix}]}},
            }
            for n in wanted
        ]
        s3.put_bucket_notification_configuration(
            Bucket=buckets[bucket.logical_name], NotificationConfiguration={"QueueConfigurations": configurations}
        )


def _create_queues(sqs: Any, prefix: str) -> dict[str, str]:
    """Dead-letter targets (if any) first, so every redrive policy can name its target's ARN."""
    urls: dict[str, str] = {}
    arns: dict[str, str] = {}
    ordered = sorted(defs.QUEUES, key=lambda q: q.dead_letter is not None)
    for queue in ordered:
        attributes = {
            "VisibilityTimeout": str(queue.visibility_timeout_s),
            "MessageRetentionPeriod": str(queue.retention_s),
            **queue.attributes,
        }
        if queue.dead_letter:
            attributes["RedrivePolicy"] = json.dumps(
                {"deadLetterTargetArn": arns[queue.dead_letter], "maxReceiveCount": str(queue.max_receive_count)}
            )
        url = sqs.create_queue(QueueName=defs.physical_name(prefix, queue.logical_name), Attributes=attributes)[
            "QueueUrl"
        ]
        urls[queue.logical_name] = url
        arns[queue.logical_name] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
    return {q.logical_name: urls[q.logical_name] for q in defs.QUEUES}
