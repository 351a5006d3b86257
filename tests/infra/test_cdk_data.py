"""The data tier: table, buckets and KMS key, as the issue specifies them."""

from __future__ import annotations

import pytest
from terrace.adapters import definitions

pytestmark = pytest.mark.infra


def test_table_is_on_demand_with_pitr_ttl_and_the_gsis_the_code_uses(synth):
    tables = synth.resources("AWS::DynamoDB::GlobalTable")
    assert len(tables) == 1
    table = next(iter(tables.values()))
    props = table["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["Replicas"][0]["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["TimeToLiveSpecification"] == {"AttributeName": definitions.TABLE.ttl_attribute, "Enabled": True}
    assert [(k["AttributeName"], k["KeyType"]) for k in props["KeySchema"]] == [("pk", "HASH"), ("sk", "RANGE")]
    assert {g["IndexName"] for g in props["GlobalSecondaryIndexes"]} == {
        i.name for i in definitions.TABLE.global_indexes
    }
    assert table["DeletionPolicy"] == "Retain"


def test_blob_bucket_is_versioned_encrypted_and_retained(synth):
    _, blobs = synth.by_path("/Data/BlobsBucket/Resource")
    props = blobs["Properties"]
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert props["LoggingConfiguration"]["DestinationBucketName"]
    assert blobs["DeletionPolicy"] == "Retain"


def test_assets_and_access_log_buckets_exist(synth):
    synth.by_path("/Data/AssetsBucket/Resource")
    synth.by_path("/Data/AccessLogsBucket/Resource")
    assert len(synth.resources("AWS::S3::Bucket")) == 3


def test_every_bucket_blocks_public_access_and_enforces_tls(synth):
    buckets = synth.resources("AWS::S3::Bucket")
    policies = {p["Properties"]["Bucket"]["Ref"]: p for p in synth.resources("AWS::S3::BucketPolicy").values()}
    for logical_id, bucket in buckets.items():
        block = bucket["Properties"]["PublicAccessBlockConfiguration"]
        assert block == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }, logical_id
        statements = policies[logical_id]["Properties"]["PolicyDocument"]["Statement"]
        assert any(
            s["Effect"] == "Deny" and s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"
            for s in statements
        ), logical_id


def test_kms_key_for_sensitive_values_rotates_and_is_kept(synth):
    keys = synth.resources("AWS::KMS::Key")
    assert len(keys) == 1
    key = next(iter(keys.values()))
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Retain"


def test_functions_get_the_kms_key(synth):
    _, api = synth.by_path("/Api/Handler/Resource")
    key_id = next(iter(synth.resources("AWS::KMS::Key")))
    assert api["Properties"]["Environment"]["Variables"]["TERRACE_KMS_KEY_ID"] == {"Fn::GetAtt": [key_id, "Arn"]}
