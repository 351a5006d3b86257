"""Grants narrower than the CDK's `grant_*` helpers.

The blob bucket is versioned so that state history survives mistakes and attacks: the internet-facing functions
may read and write objects and delete the current version of one (a delete marker: the purge of a workspace, a
state version deleted, an upload rolled back, the retention sweep), but never an object version. Only S3's own
lifecycle rule (noncurrent versions expire after 30 days, infra/data.py) erases history; no role can."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

BLOB_OBJECT_ACTIONS = (
    "s3:GetObject",
    "s3:GetObjectVersion",
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:AbortMultipartUpload",
)
BLOB_BUCKET_ACTIONS = ("s3:ListBucket", "s3:GetBucketLocation")


def grant_blobs(bucket: s3.IBucket, grantee: iam.IGrantable) -> None:
    iam.Grant.add_to_principal(
        grantee=grantee, actions=list(BLOB_OBJECT_ACTIONS), resource_arns=[bucket.arn_for_objects("*")]
    )
    iam.Grant.add_to_principal(grantee=grantee, actions=list(BLOB_BUCKET_ACTIONS), resource_arns=[bucket.bucket_arn])
