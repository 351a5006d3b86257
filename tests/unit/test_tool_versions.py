"""Tool versions: constraints as terraform reads them, the runner's catalog, and the admin records API."""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

import pytest
from table_items import memory_items
from terrace.domain import tool_versions as tv
from terrace.domain.errors import Invalid
from terrace.runner import catalog as runner_catalog
from terrace.runner.commands import select_binary
from terrace.runner.rundir import RunSetupError
from terrace.services.admin import tool_releases
from terrace.services.admin.store import ToolVersionStore
from terrace.services.admin.tool_versions import ToolVersionService
from test_admin_api import Site, site  # noqa: F401  (the fixture)

VERSIONS = ["1.0.3", "1.0.11", "1.5.7", "1.9.4", "1.11.4", "2.0.0-beta1"]


@pytest.mark.parametrize(
    ("constraint", "chosen"),
    [
        ("latest", "1.11.4"),
        ("", "1.11.4"),
        ("~> 1.0", "1.11.4"),
        ("~> 1.0.3", "1.0.11"),
        (">= 1.5, < 1.10", "1.9.4"),
        ("1.0.3", "1.0.3"),
        ("= 1.9.4", "1.9.4"),
        ("!= 1.11.4", "1.9.4"),
        ("2.0.0-beta1", "2.0.0-beta1"),
        ("~> 2.0", None),
        ("0.12.31", None),
    ],
)
def test_newest_version_satisfying_a_constraint(constraint: str, chosen: str | None) -> None:
    assert tv.newest(constraint, VERSIONS) == chosen


@pytest.mark.parametrize("bad", ["1.x", ">> 1.0", "~> ", "1.0; rm -rf /"])
def test_malformed_constraints_are_refused(bad: str) -> None:
    with pytest.raises(Invalid):
        tv.check_constraint(bad)


def _binary(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)


def test_runner_picks_the_newest_catalog_binary_that_satisfies(tmp_path: Path) -> None:
    for rel in ("terraform/1.0.3/terraform", "terraform/1.5.7/terraform", "tofu/1.9.4/tofu", "tofu/junk/tofu"):
        _binary(tmp_path / rel)
    found = runner_catalog.scan(tmp_path)
    assert found == {
        "terraform": {
            "1.0.3": str(tmp_path / "terraform/1.0.3/terraform"),
            "1.5.7": str(tmp_path / "terraform/1.5.7/terraform"),
        },
        "opentofu": {"1.9.4": str(tmp_path / "tofu/1.9.4/tofu")},
    }
    assert runner_catalog.describe(found) == "terraform=1.0.3,terraform=1.5.7,opentofu=1.9.4"
    chosen = select_binary("~> 1.0", "terraform", {}, found, "terraform")
    assert (chosen.version, chosen.product) == ("1.5.7", "Terraform")
    assert select_binary("latest", "terraform", {}, found, "opentofu").product == "OpenTofu"
    assert select_binary(">= 1.6", "terraform", {}, found, "terraform").version == "1.9.4"  # only tofu has one
    with pytest.raises(RunSetupError, match=r"installed: Terraform 1\.0\.3, Terraform 1\.5\.7, OpenTofu 1\.9\.4"):
        select_binary("~> 2.0", str(tmp_path / "terraform/1.0.3/terraform"), {}, found, "terraform")


def test_terraform_versions_are_seeded_from_the_catalog_and_managed_by_the_admin(site: Site) -> None:  # noqa: F811
    base = "/api/v2/admin/terraform-versions"
    page = site.client.get(f"{base}?page[size]=100", headers=site.admin).json()
    listed, newest = page["data"], tool_releases.TERRAFORM[-1]
    versions = [d["attributes"]["version"] for d in listed]
    assert versions[0] == newest and page["meta"]["pagination"]["total-count"] == len(tool_releases.TERRAFORM)
    assert all(d["attributes"]["usable"] and d["attributes"]["official"] for d in listed)
    assert listed[0]["attributes"]["url"].endswith(f"/terraform/{newest}/terraform_{newest}_linux_amd64.zip")
    assert [a["arch"] for a in listed[0]["attributes"]["archs"]] == ["amd64", "arm64"]
    tofu = site.client.get("/api/v2/admin/opentofu-versions?filter[version]=1.9.4", headers=site.admin).json()["data"]
    assert ("opentofu-versions", "1.9.4") in [(d["type"], d["attributes"]["version"]) for d in tofu]

    body = {"data": {"type": "terraform-versions", "attributes": {"version": "0.15.5", "url": "x", "sha": "ab"}}}
    created = site.client.post(base, json=body, headers=site.admin)
    assert created.status_code == 201, created.text
    record = created.json()["data"]
    assert (record["attributes"]["usable"], record["attributes"]["enabled"], record["attributes"]["official"]) == (
        False,
        True,
        False,
    )
    assert site.client.post(base, json=body, headers=site.admin).status_code == 409
    assert site.client.get(f"{base}?filter[version]=0.15.5", headers=site.admin).json()["data"][0]["id"] == record["id"]
    assert len(site.client.get(f"{base}?search[version]=0.15", headers=site.admin).json()["data"]) == 1

    patch = {"data": {"attributes": {"version": "0.15.4", "deprecated": True, "deprecated-reason": "old"}}}
    updated = site.client.patch(f"{base}/{record['id']}", json=patch, headers=site.admin).json()["data"]["attributes"]
    assert (updated["version"], updated["deprecated"], updated["deprecated-reason"]) == ("0.15.4", True, "old")
    assert site.client.get(f"{base}?filter[version]=0.15.5", headers=site.admin).json()["data"] == []
    bad = {"data": {"attributes": {"version": "one"}}}
    assert site.client.post(base, json=bad, headers=site.admin).status_code == 422
    assert site.client.delete(f"{base}/{record['id']}", headers=site.admin).status_code == 204
    assert site.client.get(f"{base}/{record['id']}", headers=site.admin).status_code == 404
    assert site.client.get(f"/api/v2/admin/opentofu-versions/{listed[0]['id']}", headers=site.admin).status_code == 404

    # an admin disabling a catalog version takes it out of what runs may use
    seeded = listed[0]["id"]
    site.client.patch(f"{base}/{seeded}", json={"data": {"attributes": {"enabled": False}}}, headers=site.admin)
    usable = site.container.tool_versions.usable_versions("terraform")
    assert newest not in usable and usable[-1] == tool_releases.TERRAFORM[-2]
    assert "0.15.4" not in usable  # nothing to fetch


def test_the_shipped_releases_are_listed_without_a_write_and_an_admin_may_change_or_delete_them(
    site: Site,  # noqa: F811
) -> None:
    """Reads never write: the catalog of the build is listed as it is, not stored on the first read (which wrote
    125 records inside whatever request read it first, a refused one too). A changed shipped record is stored; a
    deleted one stays deleted, in this process and the next; `terrace tools sync` brings it back."""
    base = "/api/v2/admin/terraform-versions"
    before = dict(memory_items(site.container.table))
    listed = [
        record
        for number in (1, 2)
        for record in site.client.get(f"{base}?page[size]=100&page[number]={number}", headers=site.admin).json()["data"]
    ]
    assert len(listed) == len(tool_releases.TERRAFORM) and dict(memory_items(site.container.table)) == before
    by_version = {d["attributes"]["version"]: d["id"] for d in listed}
    assert (
        site.client.get(f"{base}/{by_version['1.5.7']}", headers=site.admin).json()["data"]["attributes"]["version"]
        == "1.5.7"
    )
    taken = {"data": {"type": "terraform-versions", "attributes": {"version": "1.5.7", "url": "x", "sha": "ab"}}}
    assert site.client.post(base, json=taken, headers=site.admin).status_code == 409

    patch = {"data": {"attributes": {"deprecated": True, "deprecated-reason": "upgrade"}}}
    changed = site.client.patch(f"{base}/{by_version['1.5.7']}", json=patch, headers=site.admin)
    assert changed.status_code == 200 and changed.json()["data"]["attributes"]["deprecated"] is True
    assert site.client.delete(f"{base}/{by_version['1.4.0']}", headers=site.admin).status_code == 204
    assert site.client.get(f"{base}/{by_version['1.4.0']}", headers=site.admin).status_code == 404
    again = ToolVersionService(ToolVersionStore(site.container.table), {"terraform": ["1.0.3"]})  # another process
    versions = {r.version: r for r in again.list("terraform")}
    assert "1.4.0" not in versions and versions["1.5.7"].deprecated and versions["1.5.7"].id == by_version["1.5.7"]
    assert again.sync("terraform", ["1.4.0"]) == ["1.4.0"]
    assert "1.4.0" in {r.version for r in again.list("terraform")}


def test_workspace_terraform_version_takes_a_constraint(site: Site) -> None:  # noqa: F811
    path = "/api/v2/organizations/acme/workspaces"
    cases = (("~> 1.0", 201), (">= 1.5, < 2", 201), ("latest", 201), ("1.x", 422))
    for n, (value, status) in enumerate(cases):
        body = {"data": {"type": "workspaces", "attributes": {"name": f"w{n}", "terraform-version": value}}}
        resp = site.client.post(path, json=body, headers=site.user)
        assert resp.status_code == status, resp.text
        if status == 201:
            assert resp.json()["data"]["attributes"]["terraform-version"] == value


def test_the_top_level_url_and_sha_are_the_linux_amd64_archive_as_in_tfe(site: Site) -> None:  # noqa: F811
    base = "/api/v2/admin/terraform-versions"
    arm = {"url": "https://m/arm.zip", "sha": "b" * 64, "os": "linux", "arch": "arm64"}
    body = {"data": {"type": "terraform-versions", "attributes": {"version": "0.14.1", "url": "https://m/a.zip"}}}
    created = site.client.post(base, json=body, headers=site.admin).json()["data"]
    assert created["attributes"]["archs"] == [{"url": "https://m/a.zip", "sha": "", "os": "linux", "arch": "amd64"}]
    path = f"{base}/{created['id']}"
    patched = site.client.patch(path, json={"data": {"attributes": {"archs": [arm]}}}, headers=site.admin).json()
    assert (patched["data"]["attributes"]["url"], patched["data"]["attributes"]["sha"]) == ("", "")
    amd = {**arm, "arch": "amd64", "url": "https://m/amd.zip"}
    patched = site.client.patch(path, json={"data": {"attributes": {"archs": [arm, amd]}}}, headers=site.admin).json()
    assert patched["data"]["attributes"]["url"] == "https://m/amd.zip"
    patched = site.client.patch(path, json={"data": {"attributes": {"url": "https://m/new.zip"}}}, headers=site.admin)
    assert [a["url"] for a in patched.json()["data"]["attributes"]["archs"]] == ["https://m/new.zip"]


@pytest.mark.parametrize(("kind", "tool"), [("opa-versions", "opa"), ("sentinel-versions", "sentinel")])
def test_the_policy_tools_versions_are_records_no_run_resolves(site: Site, kind: str, tool: str) -> None:  # noqa: F811
    """TFE's admin OPA and Sentinel versions (go-tfe's AdminOpaVersions, AdminSentinelVersions): the same records
    as the run tools' (a fresh deployment lists only the OPA engine it is built with); a run never resolves to one."""
    base = f"/api/v2/admin/{kind}"
    fresh = site.client.get(base, headers=site.admin).json()["data"]
    assert [r["attributes"]["version"] for r in fresh] == ([metadata.version("regopy")] if tool == "opa" else [])
    assert site.client.get(base, headers=site.user).status_code == 404
    body = {
        "data": {"type": kind, "attributes": {"version": "0.70.0", "url": "https://x/y", "sha": "ab", "official": True}}
    }
    made = site.client.post(base, json=body, headers=site.admin)
    assert made.status_code == 201, made.text
    record = made.json()["data"]
    assert record["type"] == kind and record["attributes"]["usage"] == 0 and record["attributes"]["usable"] is False
    assert site.client.post(base, json=body, headers=site.admin).status_code == 409
    patch = {"data": {"type": kind, "attributes": {"deprecated": True, "deprecated-reason": "old"}}}
    assert (
        site.client.patch(f"{base}/{record['id']}", json=patch, headers=site.admin).json()["data"]["attributes"][
            "deprecated-reason"
        ]
        == "old"
    )
    assert "0.70.0" not in site.container.tool_versions.usable_versions("terraform")
    assert site.client.get(f"/api/v2/admin/terraform-versions/{record['id']}", headers=site.admin).status_code == 404
    assert site.client.delete(f"{base}/{record['id']}", headers=site.admin).status_code == 204
    assert site.client.get(base, headers=site.admin).json()["data"] == fresh


def test_the_opa_engine_built_in_is_an_official_enabled_record_of_the_build(site: Site) -> None:  # noqa: F811
    """go-tfe v1.109's TestAdminOPAVersions_List: the engine policies are evaluated with (regopy, pinned in
    pyproject.toml) is listed without being stored: its version, its source, the SHA-256 of its native library."""
    (record,) = site.client.get("/api/v2/admin/opa-versions", headers=site.admin).json()["data"]
    attrs = record["attributes"]
    assert attrs["version"] == metadata.version("regopy") and attrs["official"] is True and attrs["enabled"] is True
    library = next(f for f in metadata.distribution("regopy").files or [] if str(f).endswith(".so"))
    sha = hashlib.sha256(Path(str(library.locate())).read_bytes()).hexdigest()
    assert attrs["sha"] == sha and attrs["url"].startswith("https://") and attrs["deprecated"] is False
    assert [(a["sha"], a["os"]) for a in attrs["archs"]] == [(sha, "linux")]
    assert site.client.get(f"/api/v2/admin/opa-versions/{record['id']}", headers=site.admin).json()["data"] == record
    assert site.client.get("/api/v2/admin/opa-versions?page[number]=999", headers=site.admin).json()["data"] == []


def test_a_pessimistic_constraint_reads_as_terraform_reads_it() -> None:
    """`~> 1.11` allows any 1.x from 1.11 on (the newest 1.x release); `~> 1.11.0` the newest 1.11 only."""
    catalog = [*tool_releases.TERRAFORM]
    assert tv.newest("~> 1.11", catalog) == catalog[-1] and catalog[-1].startswith("1.15.")
    assert tv.newest("~> 1.11.0", catalog) == "1.11.4"
    assert tv.newest(">= 1.5, < 1.10", catalog) == "1.9.8"
