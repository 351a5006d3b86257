"""LocalStack: a fresh stack per start, dev.json with what clients need, HTTPS that verifies, clean stop."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import uuid
from pathlib import Path

import httpx
import pytest
from terrace.local.stack import LocalStack
from terrace.local.terraform_config import NULL_PROVIDER_BINARY
from terrace.local.workers import runner_env

DEV_KEYS = {"url", "hostname", "token", "organization", "ca_bundle", "cli_config", "registry_hostname"}


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory):
    stack = LocalStack(
        port=0,
        organization="widgets",
        state_dir=tmp_path_factory.mktemp("stack") / ".terrace",
        prefix=f"t{uuid.uuid4().hex[:8]}",
        workers=False,
    )
    seen = threading.Event()
    stack.background_tasks.append(lambda s: seen.set() if s.info is not None else None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TERRACE_URL_SIGNING_SECRET", "from-the-environment")
        info = stack.start()
    yield stack, info, seen
    stack.stop()


def client(info, token: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token or info.token}"}
    return httpx.Client(base_url=info.url, verify=ssl.create_default_context(cafile=info.ca_bundle), headers=headers)


def test_dev_json_holds_what_clients_need(started):
    stack, info, _ = started
    written = json.loads(stack.dev_file.read_text())
    assert DEV_KEYS <= set(written)
    assert {k: written[k] for k in DEV_KEYS} == info.as_dict()
    port = int(info.hostname.rsplit(":", 1)[1])
    assert info.hostname == f"localhost:{port}" and info.url == f"https://localhost:{port}"
    assert info.registry_hostname == f"127.0.0.1:{port}"  # a module source's host needs a dot
    assert info.organization == "widgets"
    assert Path(info.ca_bundle).is_absolute() and "BEGIN CERTIFICATE" in Path(info.ca_bundle).read_text()
    assert stack.dev_file.stat().st_mode & 0o077 == 0  # holds a token


def test_cli_config_has_credentials_and_an_offline_null_provider(started):
    _, info, _ = started
    text = Path(info.cli_config).read_text()
    assert f'credentials "{info.hostname}" {{\n  token = "{info.token}"\n}}' in text
    assert f'credentials "{info.registry_hostname}" {{\n  token = "{info.token}"\n}}' in text
    assert "filesystem_mirror" in text and "direct" in text and "exclude" in text
    mirror = Path(text.split('path    = "', 1)[1].split('"', 1)[0])
    binary = mirror / "registry.terraform.io/hashicorp/null/2.1.2/linux_amd64" / NULL_PROVIDER_BINARY
    assert binary.exists()


def test_api_over_verified_https_with_the_admin_token(started):
    _, info, _ = started
    with client(info) as http:
        discovery = http.get("/.well-known/terraform.json")
        assert discovery.status_code == 200 and discovery.json()["tfe.v2.1"] == "/api/v2/"
        org = http.get("/api/v2/organizations/widgets")
        assert org.status_code == 200
        assert org.json()["data"]["attributes"]["permissions"]["can-update"] is True
    with client(info, token="not-a-token") as http:
        assert http.get("/api/v2/organizations/widgets").status_code == 401


def test_settings_secrets_and_exported_environment(started):
    stack, _, seen = started
    assert stack.settings.url_signing_secret == "from-the-environment"
    env = json.loads(stack.dev_file.read_text())["env"]
    assert env["TERRACE_TABLE"] == stack.settings.table_name
    assert env["TERRACE_QUEUE_URL_EVENTS"] == stack.settings.queue_urls["events"]
    assert "TERRACE_RUNNER_SECRET" not in env
    assert "TERRACE_URL_SIGNING_SECRET" not in env and stack.settings.url_signing_secret not in env.values()
    assert env["TERRACE_AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")
    assert seen.wait(5), "background tasks start once the API is up"


def test_runner_processes_get_no_server_secret_or_resource_names(started):
    stack, _, _ = started
    env = runner_env(stack.settings.public_url, stack.info.ca_bundle, stack.state_dir)
    server_only = {"TERRACE_URL_SIGNING_SECRET", "TERRACE_TABLE", "TERRACE_BLOB_BUCKET", "TERRACE_KMS_KEY_ID"}
    assert not server_only & set(env), sorted(server_only & set(env))
    assert stack.settings.url_signing_secret not in env.values()
    assert not [key for key in env if key.startswith(("TERRACE_QUEUE_URL_", "AWS_", "TERRACE_AWS_"))]  # no AWS at all
    assert stack.settings.aws_endpoint_url not in env.values()
    assert env["TERRACE_API_URL"] == stack.settings.public_url
    assert "TERRACE_RUNNER_SECRET" not in env and "TERRACE_RUNNER_TOKEN" not in env  # tokens are per runner


def test_stop_closes_the_port_and_a_new_start_is_fresh(tmp_path):
    first = LocalStack(port=0, state_dir=tmp_path / "a", prefix=f"t{uuid.uuid4().hex[:8]}", workers=False)
    info = first.start()
    listener = first.listener
    assert listener is not None and listener.fileno() != -1
    first.stop()
    # the port is closed when stop returns: its listening socket (another process of a parallel test run may take
    # the freed port number at once, so the number alone proves nothing)
    assert listener.fileno() == -1 and first.listener is None

    second = LocalStack(port=0, state_dir=tmp_path / "b", prefix=f"t{uuid.uuid4().hex[:8]}", workers=False)
    info2 = second.start()
    try:
        assert info2.token != info.token
        with client(info2) as http:
            assert http.get("/api/v2/organizations/acme").status_code == 200
        with client(info2, token=info.token) as http:  # the old stack's data is gone
            assert http.get("/api/v2/organizations/acme").status_code == 401
    finally:
        second.stop()


def test_a_busy_port_is_a_clear_error(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        stack = LocalStack(port=port, state_dir=tmp_path, prefix=f"t{uuid.uuid4().hex[:8]}", workers=False)
        with pytest.raises(RuntimeError, match="busy"):
            stack.start()
        stack.stop()


def test_the_local_s3_checks_presigned_urls_as_s3_does(started):
    stack, _, _ = started
    blobs = stack.container.blobs
    url = blobs.presign_put("config/ws-x/cv-y.tar.gz", 60)
    assert httpx.put(url, content=b"archive").status_code == 200
    got = httpx.get(blobs.presign_get("config/ws-x/cv-y.tar.gz", 60))
    assert got.status_code == 200 and got.content == b"archive"
    mangled = httpx.put(url[:-10] + "nonexisting", content=b"other")  # as go-tfe's invalid-URL test sends
    assert mangled.status_code == 403 and b"SignatureDoesNotMatch" in mangled.content
    other_key = httpx.put(url.replace("cv-y", "cv-z"), content=b"other")
    assert other_key.status_code == 403
    expired = httpx.get(blobs.presign_get("config/ws-x/cv-y.tar.gz", -1))
    assert expired.status_code == 403 and b"expired" in expired.content
    assert blobs.get("config/ws-x/cv-y.tar.gz") == b"archive"  # the API's own signed calls pass
    plan_url = blobs.presign_put("plans/run-x/plan.bin", 60, exclusive=True)  # the runner's: single-use
    assert httpx.put(plan_url, content=b"plan").status_code == 403  # without the signed If-None-Match
    assert httpx.put(plan_url, content=b"plan", headers={"If-None-Match": "*"}).status_code == 200
    assert httpx.put(plan_url, content=b"swapped", headers={"If-None-Match": "*"}).status_code == 412
    assert blobs.get("plans/run-x/plan.bin") == b"plan"
