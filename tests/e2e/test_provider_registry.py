"""The private provider registry with real clients. A provider is built in the test (a renamed copy of the null
provider the dev mirror holds), zipped, listed in a SHA256SUMS signed (detached, binary) by a GPG key made with
`gpg`, and published through the API as go-tfe publishes (provider, GPG key, version, SHA256SUMS and its
signature PUT to their upload links, a platform and its zip). Then `terraform init` (1.0.3, a current terraform,
OpenTofu) installs it from `127.0.0.1:<port>/<org>/<type>` and verifies its signature; a zip that is not the one
SHA256SUMS lists, and a SHA256SUMS signed by another key, are refused by init; a remote run installs it with the
run's own credentials. One provider, published once, serves every client (a module-scoped fixture)."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import TERRAFORM, Api, StackInfo, client_env
from e2e_runs import RUN_TIMEOUT_S, remote_workspace, wait_final, wait_for
from terrace.local import terraform_config
from test_run_trigger_chain import _upload as upload_configuration

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

TERRAFORM_111 = Path(os.environ.get("TERRACE_TEST_TERRAFORM_CLOUD", "/usr/local/bin/terraform"))
TOFU = Path(os.environ.get("TERRACE_TEST_TOFU", "/work/shared/tools/opentofu/tofu"))
GPG = shutil.which("gpg") or "/usr/bin/gpg"
CLIENTS = [
    pytest.param(binary, id=name, marks=pytest.mark.skipif(not binary.exists(), reason=f"{name} is not installed"))
    for name, binary in (("terraform-1.0.3", TERRAFORM), ("terraform-1.11", TERRAFORM_111), ("tofu", TOFU))
]
GOOD, TAMPERED, FOREIGN = "1.0.0", "0.1.0", "0.2.0"  # the newest is the good one


@dataclass(frozen=True)
class Published:
    stack: StackInfo
    source: str  # <host>/<org>/<type>
    key_id: str


class Gpg:
    """A throwaway GnuPG home (short path: the agent's socket lives in it); its agent is stopped at the end."""

    def __init__(self) -> None:
        self.home = tempfile.mkdtemp(prefix="tgpg-")

    def __call__(self, *args: str, data: bytes | None = None) -> bytes:
        cmd = [GPG, "--homedir", self.home, "--batch", "--quiet", "--pinentry-mode", "loopback", "--passphrase", ""]
        done = subprocess.run([*cmd, *args], input=data, capture_output=True, timeout=120)
        assert done.returncode == 0, f"gpg {' '.join(args)}: {done.stderr.decode()}"
        return done.stdout

    def new_key(self, name: str) -> str:
        """An RSA signing key (what terraform 1.0's OpenPGP code verifies); its fingerprint."""
        self("--quick-gen-key", f"{name} <{name}@example.com>", "rsa2048", "sign", "never")
        listed = self("--list-keys", "--with-colons", f"{name}@example.com").decode()
        return next(line.split(":")[9] for line in listed.splitlines() if line.startswith("fpr:"))

    def close(self) -> None:
        subprocess.run(["gpgconf", "--homedir", self.home, "--kill", "gpg-agent"], capture_output=True, timeout=30)
        shutil.rmtree(self.home, ignore_errors=True)


def _zip(binary: bytes, name: str, version: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        info = zipfile.ZipInfo(f"terraform-provider-{name}_v{version}_x5")
        info.external_attr = 0o755 << 16  # executable once unpacked
        archive.writestr(info, binary)
    return buffer.getvalue()


def _put(api: Api, url: str, data: bytes) -> None:
    put = api.http.put(url, content=data, headers={"Content-Type": "application/octet-stream"})
    assert put.status_code in (200, 201, 204), put.text


def _publish_version(api: Api, base: str, version: str, key_id: str, files: dict[str, bytes]) -> None:
    """A version as go-tfe publishes one: create it, PUT SHA256SUMS and its signature, a linux_amd64 platform and its
    zip; then wait for the files to land (embedded: in the PUT; moto: S3's notification reaches the worker)."""
    attrs = {"version": version, "key-id": key_id, "protocols": ["5.0"]}
    body = {"data": {"type": "registry-provider-versions", "attributes": attrs}}
    links = api.request("POST", f"{base}/versions", body, expect=201).json()["data"]["links"]
    _put(api, links["shasums-upload"], files["SHA256SUMS"])
    _put(api, links["shasums-sig-upload"], files["SHA256SUMS.sig"])
    attrs = {"os": "linux", "arch": "amd64", "filename": files["filename"].decode(), "shasum": files["shasum"].decode()}
    body = {"data": {"type": "registry-provider-platforms", "attributes": attrs}}
    created = api.request("POST", f"{base}/versions/{version}/platforms", body, expect=201).json()["data"]
    _put(api, created["links"]["provider-binary-upload"], files["zip"])

    def landed() -> bool:
        read = api.request("GET", f"{base}/versions/{version}").json()["data"]["attributes"]
        platform = api.request("GET", f"{base}/versions/{version}/platforms/linux/amd64").json()["data"]
        return read["shasums-uploaded"] and read["shasums-sig-uploaded"] and platform["attributes"][
            "provider-binary-uploaded"]  # fmt: skip

    wait_for(landed, 60, what=f"{version}'s files to land")


@pytest.fixture(scope="module")
def published(run_local_stack: Any) -> Iterator[Published]:
    null = terraform_config.null_provider_source()
    if null is None:
        pytest.skip("no null provider binary to rename (the terraform-provider-null package)")
    stack = StackInfo(**run_local_stack.info.as_dict())
    api = Api(stack)
    gpg = Gpg()
    try:
        org, name = stack.organization, f"hello{os.urandom(3).hex()}"
        fingerprint, foreign = gpg.new_key("publisher"), gpg.new_key("stranger")
        attrs = {"name": name, "namespace": org, "registry-name": "private"}
        body = {"data": {"type": "registry-providers", "attributes": attrs}}
        api.request("POST", f"/api/v2/organizations/{org}/registry-providers", body, expect=201)
        armor = gpg("--armor", "--export", fingerprint).decode()
        body = {"data": {"type": "gpg-keys", "attributes": {"namespace": org, "ascii-armor": armor}}}
        key_id = api.request("POST", "/api/registry/private/v2/gpg-keys", body, expect=201).json()["data"]
        key_id = key_id["attributes"]["key-id"]
        assert key_id == fingerprint[-16:]  # computed from the key by the server
        base = f"/api/v2/organizations/{org}/registry-providers/private/{org}/{name}"
        binary = null.read_bytes()
        for version in (GOOD, TAMPERED, FOREIGN):
            filename = f"terraform-provider-{name}_{version}_linux_amd64.zip"
            genuine = _zip(binary, name, version)
            listed = f"{hashlib.sha256(genuine).hexdigest()}  {filename}\n".encode()
            signer = foreign if version == FOREIGN else fingerprint
            signature = gpg("--local-user", signer, "--detach-sign", "--output", "-", data=listed)
            served = _zip(binary + b"\0tampered", name, version) if version == TAMPERED else genuine
            files = {"SHA256SUMS": listed, "SHA256SUMS.sig": signature, "zip": served, "filename": filename.encode(),
                     "shasum": hashlib.sha256(served).hexdigest().encode()}  # fmt: skip
            _publish_version(api, base, version, key_id, files)
        yield Published(stack, f"{stack.registry_hostname}/{org}/{name}", key_id)
    finally:
        gpg.close()
        api.http.close()


def _config(source: str, version: str) -> str:
    return (
        f'terraform {{\n  required_providers {{\n    hello = {{\n      source  = "{source}"\n'
        f'      version = "{version}"\n    }}\n  }}\n}}\n'
    )


def _init(binary: Path, published: Published, version: str, work: Path, home: Path) -> subprocess.CompletedProcess[str]:
    work.mkdir()
    (work / "main.tf").write_text(_config(published.source, version))
    env = client_env(published.stack, home)
    cmd = [str(binary), "init", "-input=false", "-no-color"]
    return subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("binary", CLIENTS)
def test_init_installs_the_private_provider_and_verifies_its_signature(
    binary: Path, published: Published, tmp_path: Path
) -> None:
    done = _init(binary, published, "~> 1.0", tmp_path / "work", tmp_path / "home")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert f"{published.source} v{GOOD}" in output and published.key_id in output, output  # signed, key ID shown
    installed = tmp_path / "work" / ".terraform" / "providers" / published.source / GOOD / "linux_amd64"
    assert any(p.name.startswith("terraform-provider-") for p in installed.iterdir())


@pytest.mark.parametrize("binary", CLIENTS)
def test_init_refuses_a_zip_sha256sums_does_not_list_and_a_signature_by_another_key(
    binary: Path, published: Published, tmp_path: Path
) -> None:
    tampered = _init(binary, published, f"= {TAMPERED}", tmp_path / "tampered", tmp_path / "home")
    assert tampered.returncode != 0, tampered.stdout
    assert "checksum" in tampered.stderr.lower(), tampered.stderr
    foreign = _init(binary, published, f"= {FOREIGN}", tmp_path / "foreign", tmp_path / "home")
    assert foreign.returncode != 0, foreign.stdout
    assert "signature" in foreign.stderr.lower() or "authentication" in foreign.stderr.lower(), foreign.stderr


def test_a_remote_run_installs_the_private_provider_with_its_own_credentials(
    published: Published, run_api: Api, unique: Any
) -> None:
    """The runner's `terraform init` downloads the provider from the registry with the run's token (the runner's
    CLI configuration names the registry host) and verifies its signature."""
    ws_id = remote_workspace(run_api, unique("provs"))
    cv_id = upload_configuration(run_api, published.stack, ws_id, _config(published.source, GOOD))
    body = {"data": {"type": "runs", "relationships": {
        "workspace": {"data": {"type": "workspaces", "id": ws_id}},
        "configuration-version": {"data": {"type": "configuration-versions", "id": cv_id}}}}}  # fmt: skip
    run_id = run_api.request("POST", "/api/v2/runs", body, expect=201).json()["data"]["id"]
    final = wait_final(run_api, run_id, timeout=RUN_TIMEOUT_S)
    # nothing to change: the plan finishes once init installed the provider (the protocol answers 401 without the
    # run's credentials, and init's failure would error the run)
    assert final["attributes"]["status"] == "planned_and_finished", final
