"""The embedded server's URL-signing secret is a 0600 file of its data folder, never an environment variable
(`adapters/file_url_signing_secret.py`): made at the first start, kept, rotated once when an older format is found;
`TERRACE_URL_SIGNING_SECRET` is not read, and no environment the server hands on carries it."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from terrace.adapters import file_url_signing_secret
from terrace.bootstrap import build_embedded
from terrace.config import Settings
from terrace.local import embedded


def test_the_first_start_makes_a_private_secret_that_later_starts_keep(tmp_path: Path) -> None:
    secret = file_url_signing_secret.load(tmp_path)
    path = tmp_path / "url-signing.secret"
    assert len(secret) >= 64 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == f"terrace-url-signing-secret 2\n{secret}\n"
    assert file_url_signing_secret.load(tmp_path) == secret


def test_a_secret_of_the_older_format_is_rotated_once(tmp_path: Path) -> None:
    path = tmp_path / "url-signing.secret"
    path.write_text("what-an-older-terrace-kept\n")  # a bare secret, perhaps from TERRACE_URL_SIGNING_SECRET
    rotated = file_url_signing_secret.load(tmp_path)
    assert rotated != "what-an-older-terrace-kept" and "what-an-older" not in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert file_url_signing_secret.load(tmp_path) == rotated  # once


def test_the_embedded_server_ignores_the_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERRACE_URL_SIGNING_SECRET", "from-the-environment")
    secret = embedded.url_signing_secret(tmp_path)
    assert secret != "from-the-environment" and secret == file_url_signing_secret.load(tmp_path)


def test_an_admin_command_reads_the_data_folders_secret(tmp_path: Path) -> None:
    """`terrace user create` with TERRACE_DATA_DIR only (dev.json's environment holds no secret any more)."""
    secret = file_url_signing_secret.load(tmp_path)
    container = build_embedded(Settings(table_name="embedded", blob_bucket="embedded", data_dir=str(tmp_path)))
    try:
        assert container.settings.url_signing_secret == secret
    finally:
        container.close()


def test_the_environment_the_embedded_stack_hands_on_holds_no_secret(tmp_path: Path) -> None:
    """`terrace serve`/`make dev` put it in their own environment (`cli._run`) and in dev.json."""
    from terrace.local.stack import LocalStack

    stack = LocalStack(state_dir=tmp_path, data_dir=tmp_path, workers=False)
    stack.settings = Settings(
        table_name="embedded", blob_bucket="embedded", data_dir=str(tmp_path), url_signing_secret="s3cr3t-value"
    )
    assert stack.env() == {"TERRACE_DATA_DIR": str(tmp_path.resolve()), "TERRACE_PUBLIC_URL": stack.settings.public_url}
