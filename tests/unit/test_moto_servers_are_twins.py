"""Every moto server the project starts for Terrace is the local AWS twin (`local/moto_twin.py`: DynamoDB one
request at a time, presigned URLs checked). moto's bare threaded server runs DynamoDB requests concurrently on a
backend that is not thread-safe (lost writes, 500s under concurrency: the proof's moto state load), so a test or a
benchmark on it could fail, or pass, for moto's reasons."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("layers", "functions", "infra", "tests", "bench", "tools")
TWIN = ROOT / "layers" / "terrace" / "local" / "moto_twin.py"
BARE = ("ThreadedMotoServer", "moto.server", "moto.moto_server", "create_backend_app")


def _sources() -> list[Path]:
    found = []
    for top in SCANNED:
        for path in (ROOT / top).rglob("*.py"):
            if not ({".venv", "node_modules", "cdk.out"} & set(path.parts)) and path != TWIN:
                found.append(path)
    return found


def test_no_moto_server_is_started_but_through_the_twin() -> None:
    this = Path(__file__).resolve()
    bare = {
        str(path.relative_to(ROOT)): [name for name in BARE if name in path.read_text(errors="replace")]
        for path in _sources()
        if path.resolve() != this
    }
    assert {path: names for path, names in bare.items() if names} == {}, "start moto with local.moto_twin.running"


def test_the_scan_sees_the_twin_itself() -> None:
    """The scan is real: the twin's own module names moto's server (it is the one place allowed to)."""
    assert any(name in TWIN.read_text() for name in BARE)
    assert len(_sources()) > 100
