"""The records of the build (shipped releases, held versions) are made once per process and shared read-only:
a run's creation resolves its terraform version without rebuilding them, and no caller can change them for
another (a change goes to a copy, which is then stored)."""

from __future__ import annotations

import pytest
from terrace.adapters.memory_table import MemoryTable
from terrace.services.admin import tool_releases
from terrace.services.admin.store import ToolVersionStore
from terrace.services.admin.tool_versions import ToolVersionService

NEWEST, SECOND = tool_releases.TERRAFORM[-1], tool_releases.TERRAFORM[-2]  # the newest shipped releases
CATALOG = {"terraform": ["1.5.7", NEWEST], "opentofu": ["1.9.0"]}


def _service() -> ToolVersionService:
    """A fresh service on a fresh table: another container of the same process."""
    return ToolVersionService(ToolVersionStore(MemoryTable()), CATALOG, downloads=True)


def test_resolving_on_a_new_container_does_not_rebuild_the_shipped_records(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _service().resolve("~> 1.5") == (NEWEST, "terraform", None)  # made here at the latest
    built: list[tuple[str, str]] = []
    original = tool_releases.official_attributes

    def counting(tool: str, version: str, base: str) -> dict[str, object]:
        built.append((tool, version))
        return original(tool, version, base)

    monkeypatch.setattr(tool_releases, "official_attributes", counting)
    service = _service()
    assert service.resolve("~> 1.5") == (NEWEST, "terraform", None)
    assert service.resolve("1.0.3") == ("1.0.3", "terraform", None)  # a shipped release, fetched by the runner
    assert len(service.list("terraform")) == len(set(tool_releases.TERRAFORM) | set(CATALOG["terraform"]))
    assert built == []


def test_a_record_handed_out_is_the_callers_own() -> None:
    first = _service()
    listed = first.list("terraform")
    listed[0].archs[0]["url"] = "https://changed.example/terraform.zip"
    got = first.get("terraform", listed[1].id)
    got.archs.append({"url": "x", "sha": "", "os": "linux", "arch": "s390x"})
    again = _service().list("terraform")
    assert again[0].archs[0]["url"] != "https://changed.example/terraform.zip"
    assert [a["arch"] for a in again[1].archs] == ["amd64", "arm64"]


def test_changing_a_shipped_record_changes_it_for_that_deployment_only() -> None:
    first = _service()
    shipped = next(r for r in first.list("terraform") if r.version == NEWEST)
    changed = first.update("terraform", shipped.id, {"enabled": False, "url": "https://mirror.example/tf.zip"})
    assert not changed.enabled and changed.url == "https://mirror.example/tf.zip"
    assert NEWEST not in first.usable_versions("terraform")
    assert first.resolve("~> 1.5") == (SECOND, "terraform", None)
    first.delete("terraform", next(r.id for r in first.list("terraform") if r.version == "1.10.5"))
    assert "1.10.5" not in [r.version for r in first.list("terraform")]
    other = _service()  # the same process, another deployment's table: the build's records as shipped
    same = next(r for r in other.list("terraform") if r.version == NEWEST)
    assert same.enabled and same.url == shipped.url and same.id == shipped.id
    assert "1.10.5" in [r.version for r in other.list("terraform")]
    assert other.resolve("~> 1.5") == (NEWEST, "terraform", None)
