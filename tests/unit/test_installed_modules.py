"""The module versions a plan's `terraform init` installed, from the runner to the explorer: the runner's bounded
reader of the job's `.terraform/modules/modules.json` (tenant-written: size, JSON, shape, path tricks), the finish
report's limits on the server (refused past them, nothing stored), and the explorer answering the installed
version of a call whose configuration gives only a constraint."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env, tarball
from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config
from runner_fakes import tarball as config_tarball
from terrace.domain import installed_modules as im
from terrace.domain.installed_modules import InstalledModule, from_manifest
from terrace.runner.execution import JobExecutor
from test_explorer import _drain

SOURCE = "terrace.test/acme/vpc/aws"


def _manifest(*entries: dict[str, Any]) -> bytes:
    return json.dumps({"Modules": [{"Key": "", "Source": "", "Dir": "."}, *entries]}).encode()


# the bounded reader ------------------------------------------------------------------------------------------
def test_the_reader_keeps_versioned_calls_root_first():
    raw = _manifest(
        {"Key": "net.subnets", "Source": "terrace.test/acme/subnet/aws", "Version": "0.3.0", "Dir": "a"},
        {"Key": "net", "Source": SOURCE, "Version": "1.2.0", "Dir": "b"},
        {"Key": "local", "Source": "./modules/x", "Dir": "modules/x"},  # a local module: no version
        {"Key": "git", "Source": "git::https://example.com/x.git?ref=v1", "Dir": "c"},
        {"Key": "net", "Source": "terrace.test/acme/other/aws", "Version": "9.0.0", "Dir": "d"},  # a second "net"
    )
    assert from_manifest(raw) == [
        InstalledModule(key="net", source=SOURCE, version="1.2.0"),
        InstalledModule(key="net.subnets", source="terrace.test/acme/subnet/aws", version="0.3.0"),
    ]


@pytest.mark.parametrize(
    "raw",
    [
        b"{not json",
        b"\xff\xfe not utf-8",
        b"[1, 2]",
        b'{"Modules": {"Key": "net"}}',
        b'{"Modules": [1, "x", null, []]}',
        b'{"Modules": [{"Key": 1, "Source": "s", "Version": "1.0.0"}]}',
        b"[" * 100_000 + b"]" * 100_000,  # nested past the parser's depth
        b'{"Modules": [' + b'{"Key": "n", "Source": "s", "Version": "1.0.0"},' * 90_000 + b"1]}",  # > 4 MiB
    ],
    ids=["malformed", "not-utf8", "a-list", "not-a-list", "not-entries", "not-strings", "nested", "oversized"],
)
def test_the_reader_answers_nothing_for_a_document_it_cannot_trust(raw):
    assert from_manifest(raw) == []


def test_the_reader_drops_entries_past_the_server_s_limits_and_stops_at_its_budget():
    bad = [
        {"Key": "../up", "Source": SOURCE, "Version": "1.0.0"},
        {"Key": "k" * 65, "Source": SOURCE, "Version": "1.0.0"},
        {"Key": "sp", "Source": "terrace.test/a b/c", "Version": "1.0.0"},
        {"Key": "nl", "Source": SOURCE + "\n", "Version": "1.0.0"},
        {"Key": "long", "Source": "s" * (im.SOURCE_MAX + 1), "Version": "1.0.0"},
        {"Key": "ver", "Source": SOURCE, "Version": "1.0.0/../../x"},
        {"Key": "empty", "Source": SOURCE, "Version": ""},
    ]
    assert from_manifest(_manifest(*bad)) == []
    many = [{"Key": f"m{n:04}", "Source": SOURCE, "Version": "1.0.0"} for n in range(im.MAX_INSTALLED + 50)]
    assert [m.key for m in from_manifest(_manifest(*many))] == [f"m{n:04}" for n in range(im.MAX_INSTALLED)]
    wide = [{"Key": f"w{n:03}", "Source": "s" * im.SOURCE_MAX, "Version": "1.0.0"} for n in range(150)]
    kept = from_manifest(_manifest(*wide))
    assert 0 < len(kept) < 150 and sum(m.size for m in kept) <= im.TEXT_BUDGET


# the runner reads it after init, within the job's folder -----------------------------------------------------
def _plan(tmp_path: Path, init: str) -> Any:
    fake = FakeApi(blobs={"config.tar.gz": config_tarball({"main.tf": ""})})
    spec = make_spec("plan")
    fake.specs[spec.job_id] = spec
    api, transfers = fake.clients()
    script = fake_terraform(tmp_path / "bin", init_body=init)
    report = JobExecutor(runner_config(tmp_path, script), api, transfers, echo_to=io.StringIO()).execute(spec, False)
    assert report.status == "finished", report.error_message  # never fails the job
    return report


def _writes(raw: bytes, path: str = ".terraform/modules/modules.json") -> str:
    return f"mkdir -p .terraform/modules && printf '%s' '{raw.decode()}' > {path}"


def test_a_plan_reports_the_versions_its_init_installed(tmp_path: Path) -> None:
    raw = _manifest({"Key": "net", "Source": SOURCE, "Version": "1.2.0", "Dir": ".terraform/modules/net"})
    report = _plan(tmp_path, _writes(raw))
    assert report.installed_modules == [InstalledModule(key="net", source=SOURCE, version="1.2.0")]


def test_a_plan_with_no_modules_reports_none_installed(tmp_path: Path) -> None:
    assert _plan(tmp_path, "true").installed_modules == []


@pytest.mark.parametrize(
    "trick",
    [
        "ln -s {outside} .terraform/modules/modules.json",  # a link to a file out of the job's folder
        "rmdir .terraform/modules && ln -s {outside_dir} .terraform/modules",  # a link on the way
        "cp {outside} own.json && ln own.json .terraform/modules/modules.json",  # a file with a second name
        "mkdir .terraform/modules/modules.json",  # not a file
        "head -c 4194305 /dev/zero | tr '\\\\0' ' ' > .terraform/modules/modules.json",  # past the size cap
        "mkfifo .terraform/modules/modules.json",  # a reader that would block
    ],
    ids=["symlink", "linked-folder", "hardlink", "folder", "oversized", "fifo"],
)
def test_the_runner_reads_nothing_through_a_path_trick(tmp_path: Path, trick: str) -> None:
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    outside = outside_dir / "modules.json"
    outside.write_bytes(_manifest({"Key": "net", "Source": SOURCE, "Version": "6.6.6"}))
    init = "mkdir -p .terraform/modules && " + trick.format(outside=outside, outside_dir=outside_dir)
    assert _plan(tmp_path, init).installed_modules == []


# the server: bounded on the runner route, then the explorer's version ----------------------------------------
@pytest.fixture(scope="module")
def env() -> RunEnv:
    return make_run_env()


def _finish(env: RunEnv, spec: dict[str, Any], **report: Any) -> Any:
    body = {"runner_id": "r1", "status": "finished", "has_changes": True, **report}
    return env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=body)


@pytest.mark.parametrize(
    "entries",
    [
        [{"key": f"m{n}", "source": SOURCE, "version": "1.0.0"} for n in range(im.MAX_INSTALLED + 1)],
        [{"key": "net", "source": "s" * (im.SOURCE_MAX + 1), "version": "1.0.0"}],
        [{"key": "net", "source": SOURCE, "version": "1" * (im.VERSION_MAX + 1)}],
        [{"key": "k" * (im.KEY_MAX + 1), "source": SOURCE, "version": "1.0.0"}],
        [{"key": "../net", "source": SOURCE, "version": "1.0.0"}],
        [{"key": "net", "source": SOURCE, "version": "1.0.0", "dir": "/etc"}],
        [{"key": "net", "source": SOURCE, "version": 1}],
        [{"key": f"m{n}", "source": "s" * im.SOURCE_MAX, "version": "1.0.0"} for n in range(70)],  # past the budget
    ],
    ids=["too-many", "long-source", "long-version", "long-key", "bad-key", "unknown-field", "not-a-string", "budget"],
)
def test_a_finish_report_past_the_limits_is_refused_and_stores_nothing(env: RunEnv, entries: list[Any]) -> None:
    env.create_run(env.upload_config(), **{"plan-only": True})
    spec = env.claim()
    refused = _finish(env, spec, installed_modules=entries)
    assert refused.status_code == 422 and refused.json()["errors"][0]["status"] == "422", refused.text
    run = env.container.run_store.load(spec["run_id"])
    assert run.installed_modules is None and run.plan.status == "running"  # the report was not taken at all
    assert _finish(env, spec).status_code == 200  # the runner's next report is


def test_the_explorer_answers_the_version_the_run_installed_beside_its_constraint(env: RunEnv) -> None:
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
    cv = env.api("POST", f"/workspaces/{env.workspace_id}/configuration-versions", body).json()["data"]
    calls = {"module": {"net": {"source": SOURCE, "version": "~> 1.0"}}}
    env.land(cv["attributes"]["upload-url"].split("memory://blobs/")[1].split("?")[0],
             tarball({"main.tf.json": json.dumps(calls)}))  # fmt: skip
    env.create_run(cv["id"], **{"auto-apply": True})
    installed = [{"key": "net", "source": SOURCE, "version": "1.2.0"},
                 {"key": "net.sub", "source": "terrace.test/acme/sub/aws", "version": "0.1.0"}]  # fmt: skip
    assert _finish(env, env.claim(), installed_modules=installed).status_code == 200
    assert _finish(env, env.claim()).status_code == 200  # the apply
    _drain(env)
    query = "type=modules&filter[0][source][is][0]=" + SOURCE
    rows = env.client.get(f"/api/v2/organizations/acme/explorer?{query}", headers=env.headers).json()["data"]
    assert [(r["attributes"]["version"], r["attributes"]["workspaces"]) for r in rows] == [("1.2.0", "app")]
    [summary] = env.container.explorer_store.summaries("acme").values()
    assert [(u.version, u.constraint) for u in summary.modules] == [("1.2.0", "~> 1.0")]
