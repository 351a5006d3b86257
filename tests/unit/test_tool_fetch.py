"""A runner fetches a terraform or OpenTofu version it does not hold from the release mirror (HTTPS, the vendor's
layout), checks the archive against the signed SHA256SUMS with the key it trusts, and caches it; a tampered
archive, a signature by another key or a version the mirror lacks is refused and leaves nothing in the cache;
jobs wanting the same version at once fetch it once. The release binaries here are small scripts that answer
`version -json` as terraform does (the real binaries run in tests/e2e/test_tool_version_runs.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from aws import clients, create_table_and_bucket
from release_mirror import ReleaseMirror
from terrace.adapters.s3_blobs import S3Blobs
from terrace.local import tls
from terrace.runner import catalog as runner_catalog
from terrace.runner.agent import AgentOptions
from terrace.runner.agent import runner_config as agent_runner_config
from terrace.runner.client import Transfers
from terrace.runner.config import RunnerConfig
from terrace.runner.job_setup import JobFailed, JobSteps
from terrace.runner.release_check import ReleaseRefused, load_keys
from terrace.runner.rundir import remote_backend_override
from terrace.runner.tool_fetch import ToolFetcher


def _script(version: str) -> bytes:
    return f'#!/bin/sh\necho \'{{"terraform_version": "{version}"}}\'\n'.encode()


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReleaseMirror]:
    root = tmp_path_factory.mktemp("mirror")
    served = ReleaseMirror(root / "releases", tls.write_certificates(root / "tls"))
    served.add("terraform", "1.4.2", _script("1.4.2"))
    served.add("terraform", "1.4.3", _script("1.4.3"))
    served.add("terraform", "1.4.4", _script("1.4.4"), tamper=True)
    served.add("terraform", "1.4.5", _script("1.4.5"), stranger=True)
    served.add("terraform", "1.4.6", _script("9.9.9"))  # signed, but not the version it claims to be
    served.add("opentofu", "1.8.1", _script("1.8.1"))
    served.add("terraform", "1.4.7", _script("1.4.7"), suffix=".sig")  # the name without the key id
    served.add("opentofu", "1.8.2", _script("1.8.2"), suffix=".sig")  # OpenTofu's .sig is cosign's, never GPG's
    served.start()
    yield served
    served.stop()


def _fetcher(mirror: ReleaseMirror, cache: Path) -> ToolFetcher:
    return ToolFetcher(
        cache,
        Transfers(str(mirror.tls_files.ca_bundle), retry_delays=()),
        {"terraform": mirror.base("terraform"), "opentofu": mirror.base("opentofu")},
        load_keys(str(mirror.public_key)),
        arch="amd64",
    )


def _cached(cache: Path) -> list[str]:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if not p.name.endswith(".lock"))


def test_a_version_is_fetched_checked_and_cached_once(mirror: ReleaseMirror, tmp_path: Path) -> None:
    fetcher = _fetcher(mirror, tmp_path)
    said: list[str] = []
    path = fetcher.ensure("terraform", "1.4.2", say=said.append)
    assert path == tmp_path / "terraform" / "1.4.2" / "terraform" and path.stat().st_mode & 0o777 == 0o755
    assert "terraform_1.4.2_linux_amd64.zip" in said[0]
    assert fetcher.ensure("terraform", "1.4.2") == path  # from the cache
    assert fetcher.fetches == 1
    tofu = fetcher.ensure("opentofu", "1.8.1")
    assert tofu == tmp_path / "tofu" / "1.8.1" / "tofu"
    assert _cached(tmp_path) == ["terraform", "terraform/1.4.2", "terraform/1.4.2/terraform", "tofu", "tofu/1.8.1",
                                 "tofu/1.8.1/tofu"]  # fmt: skip


@pytest.mark.parametrize(
    ("version", "reason"),
    [
        ("1.4.4", r"terraform_1\.4\.4_linux_amd64\.zip has SHA-256 [0-9a-f]{64}, the signed sums list [0-9a-f]{64}"),
        ("1.4.5", "the SHA256SUMS signature is not valid for any trusted key"),
        ("1.4.6", "holds a binary of version 9.9.9"),
        (
            "1.3.0",
            r"the mirror has no 1\.3\.0: no terraform_1\.3\.0_SHA256SUMS \(the deployment's TERRACE_TOOL_MIRROR_",
        ),
    ],
)
def test_a_release_failing_a_check_is_refused_and_nothing_is_cached(
    mirror: ReleaseMirror, tmp_path: Path, version: str, reason: str
) -> None:
    with pytest.raises(ReleaseRefused, match=reason):
        _fetcher(mirror, tmp_path).ensure("terraform", version)
    assert _cached(tmp_path) == []


def test_the_shipped_vendor_key_does_not_trust_the_test_key(mirror: ReleaseMirror, tmp_path: Path) -> None:
    fetcher = ToolFetcher(
        tmp_path, Transfers(str(mirror.tls_files.ca_bundle), retry_delays=()), {"terraform": mirror.base("terraform")}
    )
    with pytest.raises(ReleaseRefused, match="not valid for any trusted key"):
        fetcher.ensure("terraform", "1.4.2")


def test_jobs_wanting_the_same_version_at_once_fetch_it_once(mirror: ReleaseMirror, tmp_path: Path) -> None:
    before = mirror.archive_fetches("terraform", "1.4.3")
    fetchers = [_fetcher(mirror, tmp_path) for _ in range(2)]  # two runners sharing a cache (flock) ...
    start = threading.Barrier(4)
    paths: list[Path] = []

    def job(fetcher: ToolFetcher) -> None:
        start.wait(timeout=10)
        paths.append(fetcher.ensure("terraform", "1.4.3"))

    threads = [threading.Thread(target=job, args=(f,)) for f in fetchers for _ in range(2)]  # ... two jobs each
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(paths) == 4 and len(set(paths)) == 1
    assert mirror.archive_fetches("terraform", "1.4.3") - before == 1
    assert sum(f.fetches for f in fetchers) == 1


def test_the_second_runner_gets_the_version_from_the_bucket_not_the_mirror(
    mirror: ReleaseMirror, tmp_path: Path, moto_endpoint: str
) -> None:
    made = clients(moto_endpoint)
    blobs = S3Blobs(made["s3"], create_table_and_bucket(made).bucket)
    key = "tools/terraform/1.4.2/terraform_1.4.2_linux_amd64.zip"
    bucket = (blobs.presign_get(key, 300), blobs.presign_put(key, 300, exclusive=True))
    before = mirror.archive_fetches("terraform", "1.4.2")
    first = _fetcher(mirror, tmp_path / "first")  # a runner on its own disk
    first.ensure("terraform", "1.4.2", bucket=bucket)
    assert (first.fetches, first.bucket_hits) == (1, 0) and blobs.head(key) is not None
    second = _fetcher(mirror, tmp_path / "second")
    assert second.ensure("terraform", "1.4.2", bucket=bucket).is_file()
    assert (second.fetches, second.bucket_hits) == (0, 1)
    assert mirror.archive_fetches("terraform", "1.4.2") - before == 1  # the mirror served the archive once


def test_a_bucket_copy_that_is_not_the_signed_archive_is_not_used(
    mirror: ReleaseMirror, tmp_path: Path, moto_endpoint: str
) -> None:
    made = clients(moto_endpoint)
    blobs = S3Blobs(made["s3"], create_table_and_bucket(made).bucket)
    key = "tools/opentofu/1.8.1/tofu_1.8.1_linux_amd64.zip"
    blobs.put(key, b"PK\x03\x04 planted")  # whoever wrote it, it is not what the signed sums list
    fetcher = _fetcher(mirror, tmp_path)
    assert fetcher.ensure("opentofu", "1.8.1", bucket=(blobs.presign_get(key, 300), None)).is_file()
    assert (fetcher.fetches, fetcher.bucket_hits) == (1, 0)


def test_each_tool_trusts_its_own_vendors_key_only() -> None:
    """The keys that ship are HashiCorp's and OpenTofu's release keys (by their published fingerprints), and each
    vouches for its own tool's releases only."""
    import pysequoia
    from terrace.runner import release_check

    def fingerprints(keys: list[bytes]) -> set[str]:
        return {cert.fingerprint.upper() for key in keys for cert in pysequoia.Cert.split_bytes(key)}

    assert fingerprints(release_check.shipped_keys("terraform")) == {"C874011F0AB405110D02105534365D9472D7468F"}
    assert fingerprints(release_check.shipped_keys("opentofu")) == {"E3E6E43D84CB852EADB0051D0C0AF313E5FD9F80"}
    assert release_check.shipped_keys("sentinel") == []
    assert len(release_check.shipped_keys()) == 2


def test_both_names_of_hashicorps_signature_are_read_and_only_gpgsig_of_opentofus(
    mirror: ReleaseMirror, tmp_path: Path
) -> None:
    """HashiCorp publishes `SHA256SUMS.72D7468F.sig` and `SHA256SUMS.sig` (a mirror may hold either); OpenTofu
    publishes `SHA256SUMS.gpgsig` (GPG) beside `SHA256SUMS.sig` and `.pem` (cosign's), so only `.gpgsig` counts."""
    fetcher = _fetcher(mirror, tmp_path)
    assert fetcher.ensure("terraform", "1.4.7").is_file()
    with pytest.raises(
        ReleaseRefused,
        match=r"the mirror has no signature of tofu_1\.8\.2_SHA256SUMS: no tofu_1\.8\.2_SHA256SUMS\.gpgsig \(",
    ):
        fetcher.ensure("opentofu", "1.8.2")
    assert not (tmp_path / "tofu" / "1.8.2").exists()


def _job(tool: str, version: str) -> SimpleNamespace:
    lines: list[str] = []
    spec = SimpleNamespace(tool=tool, terraform_version=version, tool_cache_url=None, tool_cache_upload_url=None)
    return SimpleNamespace(spec=spec, log=SimpleNamespace(line=lines.append))


def test_a_version_the_runner_holds_is_used_without_a_download(mirror: ReleaseMirror, tmp_path: Path) -> None:
    """The runner image's baked versions (`TERRACE_TOOLS_DIR`): a run resolved to one starts on it, no mirror
    asked (this mirror does not even publish it)."""
    baked = tmp_path / "tools" / "terraform" / "1.9.8" / "terraform"
    baked.parent.mkdir(parents=True)
    baked.write_bytes(_script("1.9.8"))
    baked.chmod(0o755)
    env = {"TERRACE_TOOLS_DIR": str(tmp_path / "tools"), "TERRACE_TOOL_MIRROR_TERRAFORM": mirror.base("terraform"),
           "TERRACE_TOOL_TRUSTED_KEYS": str(mirror.public_key), "TERRACE_WORK_DIR": str(tmp_path / "work")}  # fmt: skip
    config = RunnerConfig.from_env({"TERRACE_API_URL": "https://x", "TERRACE_RUNNER_TOKEN": "t", **env})
    steps = JobSteps(config, "runner-1", Transfers(str(mirror.tls_files.ca_bundle), retry_delays=()),
                     remote_backend_override)  # fmt: skip
    served = sum(mirror.served.values())
    binary = steps._pinned(_job("terraform", "1.9.8"), runner_catalog.scan(config.tools_dir))  # type: ignore[arg-type]
    assert binary is not None and (binary.path, binary.version) == (str(baked), "1.9.8")
    assert steps.fetcher is not None and steps.fetcher.fetches == 0 and sum(mirror.served.values()) == served


def test_an_agent_fetches_and_verifies_a_version_on_its_own_host(mirror: ReleaseMirror, tmp_path: Path) -> None:
    """`terrace agent` builds its runner from its own environment: the release mirror and trusted keys of its host,
    the cache in its work folder, and the same checks (by default the vendors' keys only)."""
    options = AgentOptions(token="pool-token", address="https://terrace.example", name="agent-1")
    env = {"TERRACE_TOOL_MIRROR_TERRAFORM": mirror.base("terraform"), "TERRACE_WORK_DIR": str(tmp_path / "a")}
    transfers = Transfers(str(mirror.tls_files.ca_bundle), retry_delays=())
    trusting = agent_runner_config(options, {**env, "TERRACE_TOOL_TRUSTED_KEYS": str(mirror.public_key)})
    steps = JobSteps(trusting, "agent-1", transfers, remote_backend_override)
    job = _job("terraform", "1.4.2")
    binary = steps._pinned(job, {})  # type: ignore[arg-type]
    assert binary is not None and binary.path == str(tmp_path / "a" / "tools" / "terraform" / "1.4.2" / "terraform")
    assert steps.fetcher is not None and steps.fetcher.fetches == 1
    stock = agent_runner_config(options, {**env, "TERRACE_WORK_DIR": str(tmp_path / "b")})
    with pytest.raises(
        JobFailed,
        match="1.4.2 could not be fetched from https://.*: .*not valid for any trusted key.*; nothing was cached",
    ):
        JobSteps(stock, "agent-2", transfers, remote_backend_override)._pinned(job, {})  # type: ignore[arg-type]
    assert not (tmp_path / "b" / "tools" / "terraform" / "1.4.2").exists()


def test_a_bucket_that_cannot_be_reached_leaves_the_mirror_to_serve(mirror: ReleaseMirror, tmp_path: Path) -> None:
    """The deployment's copy is a shortcut: a connection error on its presigned GET falls back to the mirror."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        closed = f"https://127.0.0.1:{held.getsockname()[1]}/tools/terraform_1.4.2_linux_amd64.zip"
    fetcher = _fetcher(mirror, tmp_path)
    assert fetcher.ensure("terraform", "1.4.2", bucket=(closed, closed)).is_file()
    assert (fetcher.fetches, fetcher.bucket_hits) == (1, 0)
