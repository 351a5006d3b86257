"""The vendors' keys that ship with Terrace verify the vendors' real release signatures: terraform 1.9.8's
`SHA256SUMS` and its `.sig` as HashiCorp publishes them (made in 2024 by the signing subkey 374EC75B…CD27AB87, whose
binding HashiCorp renewed in 2026: the key must hold the binding of the signature's time too, or Sequoia refuses
every release signed before the renewal), and OpenTofu 1.8.5's `SHA256SUMS` and `.gpgsig` (tests/fixtures/releases,
byte for byte as published). The sums they sign are the ones the catalog ships."""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from release_mirror import ReleaseMirror
from terrace.local import tls
from terrace.runner import release_check
from terrace.runner.client import Transfers
from terrace.runner.release_check import ReleaseRefused
from terrace.runner.tool_fetch import ToolFetcher
from terrace.services.admin import tool_releases

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "releases"
RELEASES = {
    # tool: (version, SHA256SUMS, signature, SHA-256 of the SHA256SUMS file as published)
    "terraform": ("1.9.8", "terraform_1.9.8_SHA256SUMS", "terraform_1.9.8_SHA256SUMS.sig",
                  "d13d3d14a74864332d85aa4690602b67008890d8c78166387477cbc24ec5b67d"),
    "opentofu": ("1.8.5", "tofu_1.8.5_SHA256SUMS", "tofu_1.8.5_SHA256SUMS.gpgsig",
                 "4791d5c16300f1934aed0422042f7a37266a1087de81eb458a0081d9ca11ce10"),
}  # fmt: skip


def _release(tool: str) -> tuple[bytes, bytes]:
    version, sums, signature, digest = RELEASES[tool]
    data = (FIXTURES / sums).read_bytes()
    assert hashlib.sha256(data).hexdigest() == digest  # the fixture is the published file, untouched
    return data, (FIXTURES / signature).read_bytes()


@pytest.mark.parametrize("tool", ["terraform", "opentofu"])
def test_the_shipped_key_of_each_vendor_verifies_its_real_release_signature(tool: str) -> None:
    sums, signature = _release(tool)
    release_check.verify_signature(sums, signature, release_check.shipped_keys(tool))
    other = "opentofu" if tool == "terraform" else "terraform"
    with pytest.raises(ReleaseRefused, match="not valid for any trusted key"):
        release_check.verify_signature(sums, signature, release_check.shipped_keys(other))
    with pytest.raises(ReleaseRefused, match="not valid for any trusted key"):
        release_check.verify_signature(sums.replace(b"0", b"1", 1), signature, release_check.shipped_keys(tool))


@pytest.mark.parametrize("tool", ["terraform", "opentofu"])
def test_the_catalog_ships_the_sums_the_vendor_signed(tool: str) -> None:
    version = RELEASES[tool][0]
    sums, _ = _release(tool)
    for arch in ("amd64", "arm64"):
        archive = f"{'terraform' if tool == 'terraform' else 'tofu'}_{version}_linux_{arch}.zip"
        assert tool_releases.shipped_sums(tool)[archive] == release_check.listed_sum(sums, archive)


@pytest.fixture(scope="module")
def vendor_mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReleaseMirror]:
    """A mirror holding terraform 1.9.8's real SHA256SUMS and signature beside an archive that is not the release."""
    root = tmp_path_factory.mktemp("vendor-mirror")
    served = ReleaseMirror(root / "releases", tls.write_certificates(root / "tls"))
    folder = served.root / "terraform" / "terraform" / "1.9.8"
    folder.mkdir(parents=True)
    sums, signature = _release("terraform")
    (folder / "terraform_1.9.8_SHA256SUMS").write_bytes(sums)
    (folder / "terraform_1.9.8_SHA256SUMS.sig").write_bytes(signature)
    stand_in = io.BytesIO()
    with zipfile.ZipFile(stand_in, "w") as zipped:
        zipped.writestr("terraform", b"#!/bin/sh\n")
    (folder / "terraform_1.9.8_linux_amd64.zip").write_bytes(stand_in.getvalue())
    served.start()
    yield served
    served.stop()


def test_a_runner_trusts_hashicorps_signed_sums_with_the_shipped_key_then_checks_the_archive(
    vendor_mirror: ReleaseMirror, tmp_path: Path
) -> None:
    """No TERRACE_TOOL_TRUSTED_KEYS: the shipped HashiCorp key accepts the real signed sums, so what refuses this
    release is the archive's SHA-256 (the stand-in is not the one HashiCorp signed), and nothing is cached."""
    fetcher = ToolFetcher(
        tmp_path,
        Transfers(str(vendor_mirror.tls_files.ca_bundle), retry_delays=()),
        {"terraform": vendor_mirror.base("terraform")},
        arch="amd64",
    )
    signed = release_check.listed_sum(_release("terraform")[0], "terraform_1.9.8_linux_amd64.zip")
    with pytest.raises(ReleaseRefused, match=f"has SHA-256 [0-9a-f]{{64}}, the signed sums list {signed}"):
        fetcher.ensure("terraform", "1.9.8")
    assert not (tmp_path / "terraform" / "1.9.8").exists()
