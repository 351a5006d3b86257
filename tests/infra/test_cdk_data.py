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


def test_no_kms_key_by_default_the_data_key_parameter_instead(synth):
    """A customer-managed key costs $1-3 a month at rest: by default values are sealed under a data key held in an
    SSM SecureString parameter (docs/aws/secrets.md)."""
    assert not synth.resources("AWS::KMS::Key")
    _, api = synth.by_path("/Api/Handler/Resource")
    variables = api["Properties"]["Environment"]["Variables"]
    assert "TERRACE_KMS_KEY_ID" not in variables
    assert "parameter/terrace/Terrace/data-key" in str(variables["TERRACE_DATA_KEY_ARN"])


def test_kms_key_option_rotates_is_kept_and_is_what_functions_seal_with(synth_options):
    keys = synth_options.resources("AWS::KMS::Key")
    assert len(keys) == 1
    key_id, key = next(iter(keys.items()))
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Retain"
    _, api = synth_options.by_path("/Api/Handler/Resource")
    variables = api["Properties"]["Environment"]["Variables"]
    assert variables["TERRACE_KMS_KEY_ID"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert "TERRACE_DATA_KEY_ARN" not in variables


def test_table_has_deletion_protection(synth):
    [table] = synth.resources("AWS::DynamoDB::GlobalTable").values()
    assert table["Properties"]["Replicas"][0]["DeletionProtectionEnabled"] is True


def test_a_stack_from_before_the_data_key_still_opens_its_kms_values(synth_variants, variant_context):
    """`terrace:legacyKmsKeyArn`: new values under the data key, old ones open with the kept key (decrypt only)."""
    arn = variant_context["terrace:legacyKmsKeyArn"]
    upgraded = synth_variants
    assert not upgraded.resources("AWS::KMS::Key")
    _, api = upgraded.by_path("/Api/Handler/Resource")
    variables = api["Properties"]["Environment"]["Variables"]
    assert variables["TERRACE_KMS_KEY_ID"] == arn and "TERRACE_DATA_KEY_ARN" in variables
    kms = [
        s
        for p in upgraded.resources("AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if "kms:" in str(s["Action"])
    ]
    assert kms and all(s["Action"] == "kms:Decrypt" and s["Resource"] == arn for s in kms)
