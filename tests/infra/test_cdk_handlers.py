"""The thin Lambda handlers in functions/: they translate and delegate to the container's services."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytestmark = pytest.mark.infra
FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"


@pytest.fixture(autouse=True)
def _powertools_env(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "TerraceTest")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "test")


def load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"terrace_fn_{name}", FUNCTIONS / name / "handler.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def context() -> Any:
    return SimpleNamespace(
        function_name="fn", memory_limit_in_mb=128, aws_request_id="req-1",
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:fn",
    )  # fmt: skip


def memory_container() -> Any:
    from terrace.bootstrap import build_memory

    return build_memory()


# bootstrap --------------------------------------------------------------------------------------
def test_ensure_admin_creates_a_site_admin_whose_token_is_the_secret_and_is_idempotent():
    bootstrap = load("bootstrap")
    container = memory_container()
    user_id = bootstrap.ensure_admin(container, "admin", "s3cret-token-value")
    assert bootstrap.ensure_admin(container, "admin", "s3cret-token-value") == user_id
    principal = container.accounts.authenticate("s3cret-token-value")
    assert principal.subject_id == user_id and principal.site_admin
    assert len(container.accounts.list_tokens(user_id)) == 1


def test_ensure_admin_registers_a_rotated_secret_and_revokes_the_old_one():
    from terrace.domain.errors import Unauthenticated
    from terrace.domain.principal import PrincipalKind

    bootstrap = load("bootstrap")
    container = memory_container()
    user_id = bootstrap.ensure_admin(container, "admin", "first")
    other = container.accounts.issue_token(PrincipalKind.USER, user_id, description="laptop")
    assert bootstrap.ensure_admin(container, "admin", "second") == user_id
    assert container.accounts.authenticate("second").subject_id == user_id
    with pytest.raises(Unauthenticated):
        container.accounts.authenticate("first")  # a replaced admin secret no longer works
    assert container.accounts.authenticate(other.secret).subject_id == user_id, "the admin's own tokens stay"


def _cfn_event(request_type: str) -> dict[str, Any]:
    return {
        "RequestType": request_type, "ResponseURL": "https://example.invalid/response", "StackId": "stack",
        "RequestId": "r", "LogicalResourceId": "BootstrapAdmin",
        "ResourceProperties": {"Username": "admin", "SecretArn": "arn:secret"},
    }  # fmt: skip


def test_bootstrap_custom_resource_answers_cloudformation(monkeypatch):
    bootstrap = load("bootstrap")
    container = memory_container()
    answers: list[tuple[str, dict[str, str]]] = []
    monkeypatch.setattr(bootstrap, "_get_container", lambda: container)
    monkeypatch.setattr(bootstrap, "_read_secret", lambda arn, c: "token-from-secrets-manager")
    monkeypatch.setattr(bootstrap, "_respond", lambda event, status, reason, pid, data: answers.append((status, data)))

    bootstrap.lambda_handler(_cfn_event("Create"), context())
    assert answers[-1][0] == "SUCCESS"
    assert container.accounts.authenticate("token-from-secrets-manager").subject_id == answers[-1][1]["UserId"]

    bootstrap.lambda_handler(_cfn_event("Delete"), context())
    assert answers[-1] == ("SUCCESS", {})
    assert container.accounts.find_user("admin") is not None, "delete keeps the admin"


def test_bootstrap_failure_is_reported_not_raised(monkeypatch):
    bootstrap = load("bootstrap")
    answers: list[str] = []

    def broken() -> Any:
        raise RuntimeError("table missing")

    monkeypatch.setattr(bootstrap, "_get_container", broken)
    monkeypatch.setattr(bootstrap, "_respond", lambda event, status, reason, pid, data: answers.append(status + reason))
    bootstrap.lambda_handler(_cfn_event("Create"), context())
    assert answers == ["FAILEDRuntimeError: table missing"]


# events / scaler / reaper -----------------------------------------------------------------------
def _sqs_record(message_id: str, body: str) -> dict[str, Any]:
    return {
        "messageId": message_id, "receiptHandle": "h", "body": body, "attributes": {}, "messageAttributes": {},
        "md5OfBody": "", "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:1:events",
        "awsRegion": "us-east-1",
    }  # fmt: skip


def test_events_handler_delegates_each_record_and_reports_only_failures(monkeypatch):
    events = load("events")
    handled: list[dict[str, Any]] = []

    def handle(message: dict[str, Any]) -> None:
        if message.get("boom"):
            raise RuntimeError("downstream failed")
        handled.append(message)

    monkeypatch.setattr(events, "_get_container", lambda: SimpleNamespace(events=SimpleNamespace(handle=handle)))
    batch = {
        "Records": [
            _sqs_record("ok", json.dumps({"type": "run.completed", "run_id": "run-1"})),
            _sqs_record("bad-json", "{not json"),
            _sqs_record("not-object", "[1, 2]"),
            _sqs_record("fails", json.dumps({"boom": True})),
        ]
    }
    result = events.lambda_handler(batch, context())
    assert handled == [{"type": "run.completed", "run_id": "run-1"}]
    failed = {f["itemIdentifier"] for f in result["batchItemFailures"]}
    assert failed == {"bad-json", "not-object", "fails"}


def test_events_handler_counts_run_transitions_for_the_dashboard(monkeypatch):
    events = load("events")
    added: list[str] = []
    monkeypatch.setattr(events.metrics, "add_metric", lambda name, unit, value: added.append(name))
    for before, after in [
        ("plan_queued", "planning"),
        ("applying", "applied"),
        ("planning", "errored"),
        ("pending", "plan_queued"),
    ]:
        events.count_run({"type": "run.status_changed", "from": before, "to": after})
    events.count_run({"type": "state.uploaded"})
    assert added == ["RunsStarted", "RunsFinished", "RunsFinished", "RunsErrored"]


@pytest.mark.parametrize(
    ("name", "service", "method"), [("scaler", "scaler", "scale_once"), ("reaper", "reaper", "reap_once")]
)
def test_scheduled_handlers_return_the_service_summary(monkeypatch, name, service, method):
    module = load(name)
    summary = {"backlog": 2, "started": 1}
    fake = SimpleNamespace(**{service: SimpleNamespace(**{method: lambda **_: summary})})
    monkeypatch.setattr(module, "_get_container", lambda: fake)
    assert module.lambda_handler({"source": "aws.events"}, context()) == summary


def test_the_scaler_handler_passes_an_expected_organization_on(monkeypatch):
    """The api invokes the scaler with {"expect": org} when a configuration version is created (and
    "speculative": true for a speculative one, whose runner is of the speculative lane), and with {"warm": org} when
    a workspace is opened (its warm window)."""
    module = load("scaler")
    asked: list[tuple[list[str], bool, list[str]]] = []

    def scale_once(expect: list[str], speculative: bool, warm: list[str]) -> dict[str, Any]:
        asked.append((expect, speculative, warm))
        return {}

    fake = SimpleNamespace(scaler=SimpleNamespace(scale_once=scale_once))
    monkeypatch.setattr(module, "_get_container", lambda: fake)
    module.lambda_handler({"expect": "org-key"}, context())
    module.lambda_handler({"expect": "org-key", "speculative": True}, context())
    module.lambda_handler({"source": "aws.events"}, context())
    module.lambda_handler({"warm": "org-key"}, context())
    assert asked == [(["org-key"], False, []), (["org-key"], True, []), ([], False, []), ([], False, ["org-key"])]


# api ----------------------------------------------------------------------------------------------
def test_api_handler_serves_the_app_through_mangum_built_once(monkeypatch):
    import terrace.bootstrap

    api = load("api")
    builds: list[object] = []

    def build_aws(settings: Any) -> Any:
        builds.append(settings)
        return memory_container()

    monkeypatch.setattr(terrace.bootstrap, "build_aws", build_aws)
    monkeypatch.setenv("TERRACE_TABLE", "t")
    monkeypatch.setenv("TERRACE_BLOB_BUCKET", "b")
    event = {
        "version": "2.0", "routeKey": "$default", "rawPath": "/.well-known/terraform.json", "rawQueryString": "",
        "headers": {"host": "example.cloudfront.net"},
        "requestContext": {
            "http": {"method": "GET", "path": "/.well-known/terraform.json", "sourceIp": "1.2.3.4",
                     "protocol": "HTTP/1.1", "userAgent": "terraform"},
            "requestId": "id", "stage": "$default", "domainName": "example.cloudfront.net", "accountId": "1",
            "apiId": "a", "domainPrefix": "example", "time": "x", "timeEpoch": 0,
        },
        "isBase64Encoded": False,
    }  # fmt: skip
    first = api.lambda_handler(event, context())
    second = api.lambda_handler(event, context())
    assert first["statusCode"] == 200 and second["statusCode"] == 200
    assert "tfe.v2" in json.loads(first["body"])
    assert len(builds) == 1


# secrets resolution (terrace.adapters.secrets, used by build_aws) -------------------------------
def test_ssm_parameter_arns_resolve_through_ssm():
    import boto3
    from moto import mock_aws
    from terrace.adapters.secrets import parameter_name, resolve_secrets
    from terrace.config import Settings

    arn = "arn:aws:ssm:us-east-1:123456789012:parameter/terrace/T/url-signing-key"
    assert parameter_name(arn) == "/terrace/T/url-signing-key"
    assert parameter_name("arn:aws:secretsmanager:us-east-1:1:secret:x") is None
    with mock_aws():
        ssm = boto3.client("ssm", region_name="us-east-1")
        ssm.put_parameter(Name="/terrace/T/url-signing-key", Value="from-ssm", Type="SecureString")
        settings = Settings.from_env(
            {"TERRACE_TABLE": "t", "TERRACE_BLOB_BUCKET": "b", "TERRACE_URL_SIGNING_SECRET_ARN": arn}
        )
        assert resolve_secrets(settings, ssm).url_signing_secret == "from-ssm"


def test_secret_arns_resolve_into_values_once():
    import boto3
    from moto import mock_aws
    from terrace.adapters.secrets import resolve_secrets
    from terrace.config import Settings

    with mock_aws():
        client = boto3.client("secretsmanager", region_name="us-east-1")
        signing_arn = client.create_secret(Name="signing", SecretString="signing-value")["ARN"]
        settings = Settings.from_env(
            {"TERRACE_TABLE": "t", "TERRACE_BLOB_BUCKET": "b", "TERRACE_URL_SIGNING_SECRET_ARN": signing_arn}
        )
        assert resolve_secrets(settings, client).url_signing_secret == "signing-value"
        explicit = Settings.from_env(
            {"TERRACE_TABLE": "t", "TERRACE_BLOB_BUCKET": "b", "TERRACE_URL_SIGNING_SECRET": "plain",
             "TERRACE_URL_SIGNING_SECRET_ARN": signing_arn}
        )  # fmt: skip
        assert resolve_secrets(explicit, client).url_signing_secret == "plain"


def test_bootstrap_creates_secret_parameters_once_and_rotates_tokens_but_never_the_data_key():
    import boto3
    from moto import mock_aws

    bootstrap = load("bootstrap")
    names = {"/t/admin-token": "token", "/t/url-signing-key": "signing-key", "/t/data-key": "data-key"}
    with mock_aws():
        ssm = boto3.client("ssm", region_name="us-east-1")

        def values() -> dict[str, str]:
            return {n: ssm.get_parameter(Name=n, WithDecryption=True)["Parameter"]["Value"] for n in names}

        bootstrap.ensure_parameters(ssm, names, rotate=())
        first = values()
        assert all(ssm.get_parameter(Name=n)["Parameter"]["Type"] == "SecureString" for n in names)
        assert len(__import__("base64").b64decode(first["/t/data-key"])) == 32
        bootstrap.ensure_parameters(ssm, names, rotate=())
        assert values() == first, "a redeploy changes nothing"
        bootstrap.ensure_parameters(ssm, names, rotate=bootstrap.ROTATED)
        rotated = values()
        assert rotated["/t/admin-token"] != first["/t/admin-token"]
        assert rotated["/t/url-signing-key"] != first["/t/url-signing-key"]
        assert rotated["/t/data-key"] == first["/t/data-key"]


def test_a_new_signing_key_generation_rotates_the_signing_key_once_and_nothing_else():
    """Upgrading to a Terrace version with a new `SigningKeyGeneration` (`infra/secrets.py`) replaces the URL-signing
    key on that deploy; the next deploys of the same version change nothing."""
    bootstrap = load("bootstrap")
    before = {"Rotation": "", "Parameters": {}}  # a stack of an older version: no generation
    now = {**before, "SigningKeyGeneration": "2"}

    def update(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        return {"RequestType": "Update", "OldResourceProperties": old, "ResourceProperties": new}

    assert bootstrap.rotated_kinds(update(before, now)) == ("signing-key",)
    assert bootstrap.rotated_kinds(update(now, now)) == ()
    assert bootstrap.rotated_kinds(update(now, {**now, "Rotation": "2026-12"})) == bootstrap.ROTATED
    assert bootstrap.rotated_kinds({"RequestType": "Create", "ResourceProperties": now}) == ()


def test_events_handler_puts_back_a_delivery_it_has_no_time_for(monkeypatch):
    events = load("events")
    handled: list[dict[str, Any]] = []
    published: list[dict[str, Any]] = []
    container = SimpleNamespace(
        events=SimpleNamespace(handle=handled.append), publisher=SimpleNamespace(publish=published.append)
    )
    monkeypatch.setattr(events, "_get_container", lambda: container)
    left = [40_000]
    lambda_context = SimpleNamespace(**vars(context()), get_remaining_time_in_millis=lambda: left[0])
    delivery = {"type": "notification.delivery", "configuration_id": "nc-1", "attempt": 1}
    batch = {"Records": [_sqs_record("a", json.dumps(delivery)), _sqs_record("b", json.dumps({"type": "x"}))]}
    assert events.lambda_handler(batch, lambda_context)["batchItemFailures"] == []
    assert handled == [delivery, {"type": "x"}] and published == []
    left[0] = 5_000  # too little for a 10 s request: back on the queue, acknowledged here; other events go on
    handled.clear()
    assert events.lambda_handler(batch, lambda_context)["batchItemFailures"] == []
    assert handled == [{"type": "x"}] and published == [delivery]


def test_teardown_stops_running_runner_tasks_before_the_cluster_goes(monkeypatch):
    import boto3
    from moto import mock_aws

    bootstrap = load("bootstrap")
    answers: list[tuple[str, dict[str, str]]] = []
    monkeypatch.setattr(bootstrap, "_respond", lambda event, status, reason, pid, data: answers.append((status, data)))
    with mock_aws():
        ecs = boto3.client("ecs", region_name="us-east-1")
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        ecs.create_cluster(clusterName="runners")
        ecs.register_task_definition(
            family="runner", containerDefinitions=[{"name": "runner", "image": "runner", "memory": 512}]
        )
        ecs.run_task(cluster="runners", taskDefinition="runner", count=2, launchType="FARGATE")
        event = {**_cfn_event("Create"), "ResourceType": "Custom::TerraceRunnerTasks",
                 "ResourceProperties": {"Cluster": "runners"}}  # fmt: skip
        bootstrap.lambda_handler(event, context())
        assert answers[-1] == ("SUCCESS", {}) and len(ecs.list_tasks(cluster="runners")["taskArns"]) == 2
        bootstrap.lambda_handler({**event, "RequestType": "Delete"}, context())
        assert answers[-1] == ("SUCCESS", {"Stopped": "2"})
        assert ecs.list_tasks(cluster="runners", desiredStatus="RUNNING")["taskArns"] == []


def test_a_new_rotation_value_replaces_the_admin_token_and_the_old_one_stops_working(monkeypatch):
    """The whole custom resource as CloudFormation drives it: create, then update with `terrace:rotateSecrets`."""
    import boto3
    from moto import mock_aws
    from terrace.domain.errors import Unauthenticated

    bootstrap = load("bootstrap")
    container = memory_container()
    answers: list[tuple[str, dict[str, str]]] = []
    monkeypatch.setattr(bootstrap, "_get_container", lambda: container)
    monkeypatch.setattr(bootstrap, "_respond", lambda event, status, reason, pid, data: answers.append((status, data)))
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    names = {"/terrace/T/admin-token": "token", "/terrace/T/url-signing-key": "signing-key"}
    properties = {"Username": "admin", "Parameters": names, "Rotation": "",
                  "SecretArn": "arn:aws:ssm:us-east-1:123456789012:parameter/terrace/T/admin-token"}  # fmt: skip
    with mock_aws():
        ssm = boto3.client("ssm", region_name="us-east-1")

        def token() -> str:
            return ssm.get_parameter(Name="/terrace/T/admin-token", WithDecryption=True)["Parameter"]["Value"]

        bootstrap.lambda_handler({**_cfn_event("Create"), "ResourceProperties": properties}, context())
        first = token()
        assert answers[-1][0] == "SUCCESS"
        assert container.accounts.authenticate(first).subject_id == answers[-1][1]["UserId"]
        update = {
            **_cfn_event("Update"),
            "PhysicalResourceId": "terrace-admin-admin",
            "ResourceProperties": {**properties, "Rotation": "2026-11"},
            "OldResourceProperties": properties,
        }
        bootstrap.lambda_handler(update, context())
        second = token()
        assert answers[-1][0] == "SUCCESS" and second != first
        assert container.accounts.authenticate(second).subject_id == answers[-1][1]["UserId"]
        with pytest.raises(Unauthenticated):
            container.accounts.authenticate(first)
