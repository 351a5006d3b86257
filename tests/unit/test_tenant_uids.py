"""Tenant children (`adapters/tenant_process.py`: a policy's Rego, an uploaded module's HCL, a git clone) run as an
unprivileged uid of their own when the server may switch uids (`adapters/tenant_identity.py`): no groups,
no_new_privs, and the embedded server's data folder (its master key, its database) out of their reach. Real
children, as root (this machine and CI); skipped otherwise."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from job_uids import traversable
from terrace.adapters import tenant_identity, tenant_process
from terrace.adapters.rego_policy_engine import RegoPolicyEngine
from terrace.adapters.tenant_process import Limits
from terrace.config import Settings
from terrace.wiring.embedded_adapters import EMBEDDED_DATABASE, EMBEDDED_KEY, open_data_dir

as_root = pytest.mark.skipif(
    not tenant_identity.probe(), reason="tenant children get uids of their own only as root with setpriv and prlimit"
)
LIMITS = Limits(cpu_s=10, memory_bytes=512 * 1024 * 1024, timeout_s=20)


def _probe(request: dict, limits: Limits = LIMITS) -> tenant_process.Outcome:
    return tenant_process.run_module("tenant_probe", json.dumps(request).encode(), limits)


def _settings(data: Path) -> Settings:
    secret = "s" * 40
    return Settings(table_name="embedded", blob_bucket="embedded", data_dir=str(data), url_signing_secret=secret)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An embedded server's data folder as `terrace serve` leaves it (0711: the runner's job uids pass through to
    their job folders), in folders any uid may pass through, beside a file any uid may read."""
    base = traversable(tmp_path_factory.mktemp("tenant-uids"))
    data = base / "data"
    data.mkdir(mode=0o711)
    data.chmod(0o711)
    adapters = open_data_dir(_settings(data))
    adapters.encryptor.encrypt("secret", {"for": "test"})  # the master key exists
    adapters.database.close()
    (base / "public.txt").write_text("anyone\n")
    (base / "public.txt").chmod(0o644)
    return data


@as_root
def test_a_child_runs_as_a_uid_of_its_own_without_groups_nor_new_privileges() -> None:
    answer = json.loads(_probe({}).stdout)
    uid = answer["uid"][0]
    low, high = tenant_identity.UID_RANGE
    assert low <= uid <= high and answer["uid"] == [uid] * 3 and answer["gid"] == [uid] * 3
    assert answer["groups"] == [] and answer["environ"] == {}


@as_root
def test_a_child_cannot_open_the_data_folders_master_key_nor_its_database(data_dir: Path) -> None:
    key, database, public = data_dir / EMBEDDED_KEY, data_dir / EMBEDDED_DATABASE, data_dir.parent / "public.txt"
    assert key.is_file() and database.is_file()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.stat().st_uid == os.geteuid()
    outcome = _probe({"open": [str(key), str(database), str(public)]})
    assert json.loads(outcome.stdout)["errors"] == {str(key): errno.EACCES, str(database): errno.EACCES, str(public): 0}


@as_root
def test_a_child_cannot_open_a_data_folder_of_0700(tmp_path: Path) -> None:
    data = traversable(tmp_path) / "private"
    data.mkdir(mode=0o700)
    (data / "readable-inside.txt").write_text("x")
    (data / "readable-inside.txt").chmod(0o644)
    outcome = _probe({"open": [str(data / "readable-inside.txt")]})
    assert json.loads(outcome.stdout)["errors"] == {str(data / "readable-inside.txt"): errno.EACCES}


@as_root
def test_a_policy_still_evaluates_as_its_own_uid() -> None:
    policy = 'package terraform.t\nimport rego.v1\n\ndeny contains "no" if { input.bad }\n'
    result = RegoPolicyEngine().evaluate({"t.rego": policy}, ["data.terraform.t.deny"], {"bad": True})
    assert result.error is None and result.results[0].value == ["no"]


@as_root
def test_a_module_that_does_not_drop_its_uid_is_given_nothing() -> None:
    outcome = tenant_process.run_module("tenant_no_drop", b"the tenant's request", Limits(5, 1 << 28, 1.0))
    assert outcome.stopped == "time" and outcome.stdout == b""


@as_root
def test_what_a_leased_uid_leaves_behind_goes_when_its_call_ends() -> None:
    """A host program run as the lease's uid (git): it is that uid; a process it detached from its session and a
    file it left in /tmp are gone once the lease ends."""
    limits = Limits(cpu_s=5, memory_bytes=1 << 28, timeout_s=10)
    with tenant_identity.lease() as identity:
        assert identity is not None
        left = Path("/tmp") / f"terrace-tenant-left-{identity.uid}"
        script = f"id -u; id -G; setsid sleep 600 >/dev/null 2>&1 < /dev/null & echo x > {left}"
        outcome = tenant_process.run_program(["/bin/sh", "-c", script], {}, "/", limits, identity=identity)
        assert outcome.stdout.decode().split() == [str(identity.uid), str(identity.uid)]
        assert left.exists()
    assert not left.exists() and tenant_identity.uid_pids(identity.uid) == []


def test_a_server_that_cannot_switch_uids_says_so_once(monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    monkeypatch.setattr(tenant_identity, "_switch", None)
    monkeypatch.setattr(tenant_identity.os, "geteuid", lambda: 1000)
    with caplog.at_level("WARNING", logger="terrace.tenant_identity"):
        assert tenant_identity.probe() is False and tenant_identity.probe() is False
    assert [r.getMessage() for r in caplog.records if "server's own uid 1000" in r.getMessage()] != []
    assert len(caplog.records) == 1
    with tenant_identity.lease() as identity:
        assert identity is None


def test_a_server_that_cannot_switch_uids_hides_its_process_from_its_children() -> None:
    """Lambda: the children share the function's uid, which may read a dumpable process's /proc/<pid>/environ (the
    role's keys) and memory; `prepare` makes the server non-dumpable (its children, once exec'd, are again)."""
    script = (
        "from terrace.adapters import tenant_identity as t; before = t.dumpable(); t._switch = False; "
        "t.prepare(); print(before, t.dumpable())"
    )
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=True)
    assert shown.stdout.split() == ["True", "False"]


def test_an_existing_data_folder_and_database_are_made_private(tmp_path: Path) -> None:
    """A data folder made by hand (or a volume Docker made 0755) and a database a former version left 0644: no other
    uid lists the folder or reads the database once the server opened them (the folder keeps o+x)."""
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o755)
    (data / EMBEDDED_DATABASE).touch(mode=0o644)
    (data / EMBEDDED_DATABASE).chmod(0o644)
    open_data_dir(_settings(data)).database.close()
    assert stat.S_IMODE(data.stat().st_mode) == 0o711
    assert stat.S_IMODE((data / EMBEDDED_DATABASE).stat().st_mode) == 0o600


@pytest.mark.parametrize("own_uid", [pytest.param(True, marks=as_root), False])
def test_a_child_cannot_open_a_socket(monkeypatch: pytest.MonkeyPatch, own_uid: bool) -> None:
    """No network for an evaluating child (`adapters/no_sockets.py`), with a uid of its own or with the server's
    (Lambda): neither the instance metadata, the ECS credentials endpoint nor the server's own API."""
    if not own_uid:
        monkeypatch.setattr(tenant_identity, "_switch", False)
    refused = json.loads(_probe({"do": "socket"}).stdout)["refused"]
    assert refused == {"inet": errno.EPERM, "inet6": errno.EPERM, "unix": errno.EPERM}
