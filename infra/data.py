"""The data tier: the DynamoDB table, the S3 buckets and the KMS key for sensitive values.

Table and bucket shapes come from terrace.adapters.definitions, the module local mode seeds moto from.
Everything holding user data is retained when the stack is deleted.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct
from terrace.adapters import definitions

_ATTR_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}


def _attr(key: definitions.KeyAttr) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=key.name, type=_ATTR_TYPES[key.type])


class Data(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, kms_key: bool = False) -> None:
        super().__init__(scope, construct_id)

        # Opt-in (`terrace:kmsKey`): $1 a month, and $1 more for each of its first two yearly rotations. By default
        # sensitive values are sealed under a data key held in SSM (infra/secrets.py; docs/aws/secrets.md).
        self.key: kms.Key | None = None
        if kms_key:
            self.key = kms.Key(
                self,
                "SensitiveValuesKey",
                description="Terrace: envelope encryption of sensitive variables",
                enable_key_rotation=True,
                removal_policy=RemovalPolicy.RETAIN,
            )

        spec = definitions.TABLE
        self.table = dynamodb.TableV2(
            self,
            "Table",
            partition_key=_attr(spec.partition_key),
            sort_key=_attr(spec.sort_key),
            billing=dynamodb.Billing.on_demand(),
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=spec.ttl_attribute,
            global_secondary_indexes=[
                dynamodb.GlobalSecondaryIndexPropsV2(
                    index_name=index.name,
                    partition_key=_attr(index.partition_key),
                    sort_key=_attr(index.sort_key),
                )
                for index in spec.global_indexes
            ],
            removal_policy=RemovalPolicy.RETAIN,
            deletion_protection=True,  # a `cdk destroy` or a replacement never drops the data
        )

        self.access_logs = s3.Bucket(
            self,
            "AccessLogsBucket",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            # CloudFront standard logging writes with ACLs; S3 server access logs use the bucket policy.
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(90))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.blobs = self._bucket(definitions.BLOB_BUCKET)
        self.assets = self._bucket(definitions.ASSETS_BUCKET)

    def _bucket(self, spec: definitions.BucketDefinition) -> s3.Bucket:
        rules = [s3.LifecycleRule(abort_incomplete_multipart_upload_after=Duration.days(1))]
        if spec.versioned:
            rules.append(s3.LifecycleRule(noncurrent_version_expiration=Duration.days(30)))
        return s3.Bucket(
            self,
            f"{spec.logical_name.capitalize()}Bucket",
            versioned=spec.versioned,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix=f"s3/{spec.logical_name}/",
            lifecycle_rules=rules,
            removal_policy=RemovalPolicy.RETAIN,
        )
