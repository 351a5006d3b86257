"""What a caller sees when an upload is an archive bomb (an extension header announcing 400 MB): a module version
and a policy set version fail with the reason, a run's job errors with it and runs nothing. And the rule that
keeps it so: no module but `domain/bounded_tar.py` opens an archive."""

from __future__ import annotations

import ast
import io
from pathlib import Path
from typing import Any

from policy_helpers import create_set
from run_helpers import RunEnv, make_run_env
from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config
from tar_bombs import ANNOUNCED, MIB, bomb
from terrace.runner.execution import JobExecutor

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "terrace"
OPENER = PACKAGE / "domain" / "bounded_tar.py"
ZIP_OPENER = PACKAGE / "domain" / "bounded_zip.py"  # release zips (runner/tool_fetch.py)
KINDS = {b"L": "GNU long-name (L)", b"K": "GNU long-link (K)", b"x": "PAX (x)", b"g": "global PAX (g)"}


def _truncated(kind: bytes) -> bytes:
    """400 MiB announced, 1 MiB present: what tarfile asks for is allocated before it finds the stream short."""
    return bomb(kind, present=MIB)


def _land_module_version(env: RunEnv, version: str, data: bytes) -> dict[str, Any]:
    body = {"data": {"type": "registry-module-versions", "attributes": {"version": version}}}
    created = env.api("POST", "/registry-modules/acme/vpc/aws/versions", body)
    assert created.status_code == 201, created.text
    env.land(created.json()["data"]["links"]["upload"].split("memory://blobs/")[1].split("?")[0], data)
    read = env.api("GET", f"/organizations/acme/registry-modules/private/acme/vpc/aws/version?module_version={version}")
    assert read.status_code == 200, read.text
    return dict(read.json()["data"]["attributes"])


def test_a_module_version_with_a_huge_header_fails_with_the_reason() -> None:
    env = make_run_env()
    body = {"data": {"type": "registry-modules", "attributes": {"name": "vpc", "provider": "aws"}}}
    assert env.api("POST", "/organizations/acme/registry-modules", body).status_code == 201
    for minor, (kind, what) in enumerate(KINDS.items()):
        failed = _land_module_version(env, f"0.{minor}.0", _truncated(kind))
        assert failed["status"] == "reg_ingress_failed", failed
        assert f"{what} header of {ANNOUNCED} bytes" in failed["error"], failed


def test_a_policy_set_version_with_a_huge_header_errors_with_the_reason() -> None:
    env = make_run_env()
    ps = create_set(env, "bundle")
    for kind, what in KINDS.items():
        created = env.api("POST", f"/policy-sets/{ps['id']}/versions")
        assert created.status_code == 201, created.text
        doc = created.json()["data"]
        env.land(doc["links"]["upload"].split("memory://blobs/")[1].split("?")[0], _truncated(kind))
        status = env.api("GET", f"/policy-set-versions/{doc['id']}").json()["data"]["attributes"]
        assert status["status"] == "errored", status
        assert f"{what} header of {ANNOUNCED} bytes" in status["error"], status


def test_a_configuration_with_a_huge_header_errors_the_job_and_runs_nothing(tmp_path: Path) -> None:
    for kind, what in KINDS.items():
        folder = tmp_path / kind.decode()
        fake = FakeApi(blobs={"config.tar.gz": _truncated(kind)})
        spec = make_spec("plan")
        fake.specs[spec.job_id] = spec
        api, transfers = fake.clients()
        script = fake_terraform(folder / "bin")
        report = JobExecutor(runner_config(folder, script), api, transfers, echo_to=io.StringIO()).execute(spec)
        assert report.status == "errored", report
        assert f"{what} header of {ANNOUNCED} bytes" in (report.error_message or ""), report.error_message
        ran = [p.read_text().splitlines()[0] for p in sorted((folder / "bin").glob("call-*.args"))]
        assert ran == ["version"], ran


def _archive_openings(path: Path) -> list[str]:
    """Where a file opens an archive: tarfile's openers, zipfile, shutil's unpacking."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in {
                ("tarfile", "open"),
                ("tarfile", "TarFile"),
                ("shutil", "unpack_archive"),
            }:
                found.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.Name) and node.id == "TarFile":
            found.append(f"TarFile (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and node.module in ("tarfile", "zipfile"):
            found.append(f"from {node.module} import ... (line {node.lineno})")
        elif isinstance(node, ast.Import) and any(a.name == "zipfile" for a in node.names):
            found.append(f"import zipfile (line {node.lineno})")
    return found


def test_only_bounded_tar_opens_an_archive() -> None:
    """Every archive the package reads (uploads, configurations, anything later) is opened by `open_tar`, which
    checks each header before tarfile reads its payload; a zip (a terraform release) by `bounded_zip.py`'s
    `extract_member`, which bounds the entries, the declared and the written sizes."""
    found = {
        str(path.relative_to(PACKAGE)): openings
        for path in sorted(PACKAGE.rglob("*.py"))
        if path not in (OPENER, ZIP_OPENER) and (openings := _archive_openings(path))
    }
    assert found == {}
    assert _archive_openings(OPENER) and _archive_openings(ZIP_OPENER)  # the rule's readers are where it says
    assert not any("tarfile" in o for o in _archive_openings(ZIP_OPENER))
