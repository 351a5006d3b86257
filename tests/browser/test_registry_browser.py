"""The private registry in chromium, over the real app (in-memory adapters): an owner publishes a module version
from the module page by choosing a `.tar.gz` in the upload form, sees it read (its inputs, how to use it), gets
the reason beside the form for a version published twice; the registry page lists providers, and a provider's
page shows its versions and platforms."""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from terrace.bootstrap import build_memory
from terrace.domain.principal import Principal, PrincipalKind

from .conftest import serve_app, shoot

playwright_api = pytest.importorskip("playwright.sync_api")

MAIN_TF = 'variable "region" {\n  type        = string\n  description = "Where it goes"\n}\n'


def _tarball(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return buffer.getvalue()


@pytest.fixture
def stack(free_port: int) -> Iterator[tuple[str, str, Any]]:
    """The app with acme's module vpc/aws (no version yet) and provider hello (one version, one platform)."""
    container = build_memory()
    alice = container.accounts.create_user("alice", "alice@example.com")
    owner = Principal(PrincipalKind.USER, alice.id, alice.username)
    container.organizations.create(owner, "acme", "ops@example.com")
    container.registry_modules.create(owner, "acme", {"name": "vpc", "provider": "aws"})
    container.registry_providers.create(owner, "acme", {"name": "hello", "namespace": "acme",
                                                        "registry-name": "private"})  # fmt: skip
    address = ("private", "acme", "hello")
    container.provider_versions.create(owner, "acme", address, {"version": "0.3.0", "key-id": "ABCDEF0123456789"})
    platform = {"os": "linux", "arch": "arm64", "shasum": hashlib.sha256(b"z").hexdigest(), "filename": "h.zip"}
    container.provider_platforms.create(owner, "acme", address, "0.3.0", platform)
    token = container.accounts.issue_token(PrincipalKind.USER, alice.id).secret
    with serve_app(container, free_port) as base:
        yield base, token, container


def test_an_owner_publishes_a_module_version_from_the_browser(stack: Any, page: Any, tmp_path: Path) -> None:
    expect = playwright_api.expect
    base, token, _ = stack
    archive = tmp_path / "vpc.tar.gz"
    archive.write_bytes(_tarball({"main.tf": MAIN_TF, "README.md": "# VPC from the browser\n"}))
    page.goto(f"{base}/app")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{base}/app/acme/registry")
    expect(page.locator("#providers")).to_contain_text("acme/hello")
    page.get_by_role("link", name="acme/vpc").click()
    page.get_by_label("Version").fill("1.4.0")
    page.get_by_label("Module archive (.tar.gz, a .tf file at its root)").set_input_files(str(archive))
    page.get_by_role("button", name="Publish").click()
    expect(page.locator("#shown-version")).to_have_text("1.4.0")
    expect(page.locator("#inputs")).to_contain_text("Where it goes")
    expect(page.locator("#usage")).to_contain_text('version = "1.4.0"')
    expect(page.locator("#readme")).to_contain_text("VPC from the browser")
    shoot(page, "registry-module-published")

    page.get_by_label("Version").fill("1.4.0")
    page.get_by_label("Module archive (.tar.gz, a .tf file at its root)").set_input_files(str(archive))
    page.get_by_role("button", name="Publish").click()
    expect(page.get_by_role("alert")).to_contain_text("already exists")

    page.goto(f"{base}/app/acme/registry")
    page.get_by_role("link", name="acme/hello").click()
    expect(page.locator("#versions")).to_contain_text("0.3.0")
    expect(page.locator("#versions")).to_contain_text("linux_arm64")
    expect(page.locator("#usage")).to_contain_text("acme/hello")
    shoot(page, "registry-provider")
