"""adapters/boto_session.py: the AWS adapters' boto3 session reads a pruned copy of botocore's endpoints file and its
services' models without their documentation, and its clients resolve the same endpoints, signing regions and names
and have the same operations and shapes as default botocore's; without the copy (or with one of another botocore
version) botocore loads its own files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import botocore
import botocore.exceptions
import botocore.loaders
import pytest
from moto import mock_aws
from terrace.adapters import boto_session
from terrace.config import Settings
from terrace.wiring.aws_adapters import boto_clients

BOTOCORE = Path(botocore.__file__).parent
REGIONS = ("us-east-1", "eu-west-1", "cn-north-1", "us-gov-west-1")
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pruned copy, written once for the module (no test changes it)."""
    root = tmp_path_factory.mktemp("botocore-data")
    boto_session.write_pruned(BOTOCORE, root)
    return root


_DEFAULT_SESSIONS: dict[str, Any] = {}


def default_session(region: str) -> Any:
    """Default botocore's session in `region`, one per region for the module (it loads each model once)."""
    if region not in _DEFAULT_SESSIONS:
        _DEFAULT_SESSIONS[region] = boto3.session.Session(region_name=region)
    return _DEFAULT_SESSIONS[region]


def endpoints_read(session: Any) -> dict[str, Any]:
    loaded: dict[str, Any] = session._session.get_component("data_loader").load_data("endpoints")
    return loaded


def resolved(client: Any) -> tuple[str, str, str, str]:
    signer = client._request_signer
    return client.meta.endpoint_url, client.meta.region_name, signer.region_name, signer.signing_name


def test_the_pruned_file_keeps_every_partition_with_only_terraces_services(data_root: Path) -> None:
    written = json.loads((data_root / botocore.__version__ / "endpoints.json").read_text())
    original = json.loads((BOTOCORE / "data" / "endpoints.json").read_text())
    assert [p["partition"] for p in written["partitions"]] == [p["partition"] for p in original["partitions"]]
    for pruned, full in zip(written["partitions"], original["partitions"], strict=True):
        assert set(pruned["services"]) == set(full["services"]) & boto_session.SERVICES
        assert {k: v for k, v in pruned.items() if k != "services"} == {
            k: v for k, v in full.items() if k != "services"
        }
        assert all(pruned["services"][name] == full["services"][name] for name in pruned["services"])
    assert {"dynamodb", "s3"} <= set(written["partitions"][0]["services"])


@pytest.mark.parametrize("region", REGIONS)
@pytest.mark.parametrize("service", ["dynamodb", "s3", "lambda"])
def test_clients_resolve_what_default_botocore_resolves(data_root: Path, region: str, service: str) -> None:
    session = boto_session.session(region, data_root)
    assert len(endpoints_read(session)["partitions"][0]["services"]) < 20  # the pruned file, not botocore's
    pruned = session.client(service, **CREDENTIALS)
    default = default_session(region).client(service, **CREDENTIALS)
    assert resolved(pruned) == resolved(default)
    assert pruned.meta.endpoint_url.startswith("https://")


def test_without_the_pruned_file_botocore_reads_its_own(tmp_path: Path) -> None:
    assert boto_session.data_path(tmp_path) is None
    session = boto_session.session("us-east-1", tmp_path)
    assert len(endpoints_read(session)["partitions"][0]["services"]) > 100


def test_a_file_of_another_botocore_version_is_never_read(tmp_path: Path) -> None:
    other = tmp_path / "0.0.1"
    other.mkdir()
    (other / "endpoints.json").write_text(json.dumps({"partitions": [], "version": 3}))
    assert boto_session.data_path(tmp_path) is None
    assert len(endpoints_read(boto_session.session("eu-west-1", tmp_path))["partitions"]) > 1


def test_every_client_the_adapters_make_is_of_a_kept_service() -> None:
    settings = Settings(table_name="t", blob_bucket="b", url_signing_secret="s")
    assert set(boto_clients(settings)) <= boto_session.SERVICES
    assert {"lambda", "secretsmanager"} <= boto_session.SERVICES  # invoke_scaler, adapters/secrets.py


def test_the_version_is_read_from_the_package_source(tmp_path: Path) -> None:
    assert boto_session.botocore_version(BOTOCORE) == botocore.__version__
    (tmp_path / "__init__.py").write_text("import os\n")
    with pytest.raises(ValueError, match="no __version__"):
        boto_session.botocore_version(tmp_path)


def test_a_kept_services_model_loads_without_listing_every_service(data_root: Path, monkeypatch) -> None:
    listed: list[str] = []
    full_listing = botocore.loaders.Loader.list_available_services

    def listing(self: Any, type_name: str) -> list[str]:
        listed.append(type_name)
        found: list[str] = full_listing(self, type_name)
        return found

    monkeypatch.setattr(botocore.loaders.Loader, "list_available_services", listing)
    session = boto_session.session("eu-west-1", data_root)
    dynamodb = session.client("dynamodb", **CREDENTIALS)
    default = boto3.session.Session(region_name="eu-west-1").client("dynamodb", **CREDENTIALS)
    assert dynamodb.meta.service_model.api_version == default.meta.service_model.api_version
    assert dynamodb.meta.service_model.operation_names == default.meta.service_model.operation_names
    assert listed == ["service-2", "endpoint-rule-set-1"], "only the default client listed every service"
    listed.clear()
    session.client("ec2", **CREDENTIALS)  # not one of Terrace's: botocore's own check
    assert listed == ["service-2", "endpoint-rule-set-1"]
    with pytest.raises(botocore.exceptions.UnknownServiceError):
        session.client("no-such-service", **CREDENTIALS)


def test_secrets_are_read_through_the_session(monkeypatch) -> None:
    from moto import mock_aws
    from terrace.adapters import secrets

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    made: list[str | None] = []
    real_session = boto_session.session
    monkeypatch.setattr(boto_session, "session", lambda region=None: made.append(region) or real_session(region))
    with mock_aws():
        ssm = boto3.client("ssm", region_name="eu-west-1")
        ssm.put_parameter(Name="/terrace/test-secret", Value="from-ssm", Type="SecureString")
        arn = "arn:aws:ssm:eu-west-1:123456789012:parameter/terrace/test-secret"
        assert secrets.fetch_secret(arn, "eu-west-1") == "from-ssm"
    assert made == ["eu-west-1"]


@pytest.mark.parametrize("service", sorted(boto_session.SERVICES))
def test_the_models_are_botocores_latest_without_their_documentation(data_root: Path, service: str) -> None:
    loader = botocore.loaders.Loader()
    version = loader.determine_latest_version(service, "service-2")
    original = loader.load_data(f"{service}/{version}/service-2")
    written = json.loads((data_root / botocore.__version__ / service / version / "service-2.json").read_text())
    assert written == boto_session.undocumented(original)
    assert len(json.dumps(written)) < len(json.dumps(original)) / 2
    assert written["metadata"] == {k: v for k, v in original["metadata"].items() if k != "documentation"}


def test_undocumented_keeps_members_and_shapes_named_documentation() -> None:
    model = {"documentation": "text", "shapes": {"documentation": {"type": "string", "documentation": "x"},
             "S": {"type": "structure", "members": {"documentation": {"shape": "documentation"}}}},
             "operations": {"Op": {"documentationUrl": "u", "name": "Op", "input": {"shape": "S"}}}}  # fmt: skip
    assert boto_session.undocumented(model) == {
        "shapes": {"documentation": {"type": "string"},
                   "S": {"type": "structure", "members": {"documentation": {"shape": "documentation"}}}},
        "operations": {"Op": {"name": "Op", "input": {"shape": "S"}}},
    }  # fmt: skip


@pytest.mark.parametrize("service", ["dynamodb", "s3", "sqs"])
def test_clients_are_made_from_the_undocumented_models_and_serialize_as_botocores(data_root: Path, service: str):
    session = boto_session.session("eu-west-1", data_root)
    client = session.client(service, **CREDENTIALS)
    default = default_session("eu-west-1").client(service, **CREDENTIALS)
    model, full = client.meta.service_model, default.meta.service_model
    assert model.documentation == "" and full.documentation  # the pruned model, not botocore's
    assert model.operation_names == full.operation_names and model.shape_names == full.shape_names
    for name in model.operation_names:
        ours, theirs = model.operation_model(name), full.operation_model(name)
        assert (ours.http, ours.input_shape and ours.input_shape.members.keys()) == (
            theirs.http,
            theirs.input_shape and theirs.input_shape.members.keys(),
        )
    assert client.meta.method_to_api_mapping == default.meta.method_to_api_mapping


def test_requests_resolve_their_endpoints_with_the_undocumented_models(data_root: Path) -> None:
    """A request resolves its endpoint from the model (S3's reads each client context parameter's documentation:
    a model without it failed every S3 call with a KeyError)."""
    session = boto_session.session("eu-west-1", data_root)
    with mock_aws():
        s3 = session.client("s3", **CREDENTIALS)
        s3.create_bucket(Bucket="terrace-state", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        s3.put_object(Bucket="terrace-state", Key="k", Body=b"state")
        assert s3.get_object(Bucket="terrace-state", Key="k")["Body"].read() == b"state"
        assert session.client("dynamodb", **CREDENTIALS).list_tables()["TableNames"] == []
        assert "QueueUrls" not in session.client("sqs", **CREDENTIALS).list_queues()
    for service in sorted(boto_session.SERVICES):
        ours = session.client(service, **CREDENTIALS).meta.service_model
        theirs = default_session("eu-west-1").client(service, **CREDENTIALS).meta.service_model
        assert ours.client_context_parameters == theirs.client_context_parameters, service
