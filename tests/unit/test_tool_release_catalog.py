"""The catalog a fresh deployment lists before any network access: every official terraform and OpenTofu release
known when the build was made, with its URLs on the release mirror and the SHA-256 sums of its linux archives as
the vendors' signed SHA256SUMS list them (TFE ships its list the same way), served by the admin API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from terrace.services.admin import tool_releases
from test_admin_api import Site, site  # noqa: F401  (the fixture)

REPO = Path(__file__).resolve().parents[2]
TOFU = "https://github.com/opentofu/opentofu/releases/download"
SHA = re.compile(r"^[0-9a-f]{64}$")


def _listed(site: Site, kind: str) -> list[dict]:  # noqa: F811
    out, page = [], 1
    while True:
        body = site.client.get(f"/api/v2/admin/{kind}?page[size]=100&page[number]={page}", headers=site.admin).json()
        out += [d["attributes"] for d in body["data"]]
        if not body["meta"]["pagination"]["next-page"]:
            return out
        page += 1


@pytest.mark.parametrize(
    ("kind", "prefix", "oldest", "newest", "releases", "with_sums", "summed_newest"),
    [
        ("terraform-versions", "https://releases.hashicorp.com/terraform/", "1.0.0", "1.15.9", 127, 114, "1.15.8"),
        ("opentofu-versions", f"{TOFU}/v", "1.6.0", "1.12.6", 65, 42, "1.12.6"),
    ],
)
def test_a_fresh_deployment_lists_the_official_releases_with_their_urls_and_sums(
    site: Site,  # noqa: F811
    kind: str,
    prefix: str,
    oldest: str,
    newest: str,
    releases: int,
    with_sums: int,
    summed_newest: str,
) -> None:
    listed = _listed(site, kind)
    versions = [r["version"] for r in listed]
    assert len(versions) == len(set(versions)) >= releases and versions[0] == newest and versions[-1] == oldest
    for record in listed:
        assert record["official"] and record["enabled"] and record["url"].startswith(prefix)
        assert [(a["os"], a["arch"]) for a in record["archs"]] == [("linux", "amd64"), ("linux", "arm64")]
        assert record["archs"][0]["url"] == record["url"] and record["archs"][0]["sha"] == record["sha"]
        assert record["url"].endswith(f"_{record['version']}_linux_amd64.zip")
    summed = [r for r in listed if all(SHA.match(a["sha"]) for a in r["archs"])]
    assert len(summed) >= with_sums  # a release without a recorded sum lists "" (the runner checks the signed sums)
    assert all(r["sha"] == "" for r in listed if r not in summed)
    assert {r["version"] for r in summed} >= {summed_newest, "1.9.0"}


def test_the_recorded_sums_are_the_vendors(site: Site) -> None:  # noqa: F811
    """The runner image pins its baked terraform by the SHA-256 HashiCorp's SHA256SUMS lists for its linux_arm64
    zip: the catalog records the same sum for it."""
    dockerfile = (REPO / "runner-container" / "Dockerfile").read_text()
    version = re.search(r"^ARG TERRAFORM_VERSION=(\S+)$", dockerfile, re.M)
    pinned = re.search(r"^ARG TERRAFORM_SHA256=(\S+)$", dockerfile, re.M)
    assert version and pinned
    listed = site.client.get(
        f"/api/v2/admin/terraform-versions?filter[version]={version.group(1)}", headers=site.admin
    ).json()["data"]
    (arm64,) = [a for a in listed[0]["attributes"]["archs"] if a["arch"] == "arm64"]
    assert arm64["sha"] == pinned.group(1)
    assert tool_releases.shipped_sums("terraform")[f"terraform_{version.group(1)}_linux_arm64.zip"] == pinned.group(1)


ATTRIBUTES = {
    "version",
    "url",
    "sha",
    "official",
    "enabled",
    "beta",
    "deprecated",
    "deprecated-reason",
    "usage",
    "archs",
}


def test_usage_counts_the_workspaces_pinned_to_a_version_for_the_tool_their_runs_use(site: Site) -> None:  # noqa: F811
    """TFE's `usage`: how many workspaces use the version. 1.9.4 is a release of both tools: a workspace's runs
    take its tool's (`iac-platform`; the deployment's default, terraform, when it names none), so OpenTofu 1.9.4 has
    the one OpenTofu workspace; 1.10.10 is OpenTofu's only."""
    asked = (("1.9.4", None), ("1.9.4", None), ("1.10.10", None), ("~> 1.9", None), ("1.9.4", "opentofu"))
    for n, (version, tool) in enumerate(asked):
        attributes = {"name": f"u{n}", "terraform-version": version, **({"iac-platform": tool} if tool else {})}
        body = {"data": {"type": "workspaces", "attributes": attributes}}
        assert (
            site.client.post("/api/v2/organizations/acme/workspaces", json=body, headers=site.user).status_code == 201
        )

    def usage(kind: str, version: str) -> dict:
        (record,) = site.client.get(f"/api/v2/admin/{kind}?filter[version]={version}", headers=site.admin).json()[
            "data"
        ]
        assert set(record["attributes"]) >= ATTRIBUTES
        read = site.client.get(f"/api/v2/admin/{kind}/{record['id']}", headers=site.admin).json()["data"]
        assert read["attributes"]["usage"] == record["attributes"]["usage"]
        return record["attributes"]["usage"]

    assert usage("terraform-versions", "1.9.4") == 2 and usage("opentofu-versions", "1.9.4") == 1
    assert usage("opentofu-versions", "1.10.10") == 1 and usage("terraform-versions", "1.9.8") == 0


def test_a_worktree_links_the_shared_opentofu_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make dev` and the e2e stacks hold ../shared's OpenTofu from a checkout and ../../shared's from a worktree
    under it (a worktree's OpenTofu runs otherwise errored: no runner held it)."""
    from terrace.local import tool_catalog

    tofu = tmp_path / "shared" / "tools" / "opentofu" / "tofu"
    tofu.parent.mkdir(parents=True)
    tofu.write_text("#!/bin/sh\n")
    monkeypatch.delenv("TERRACE_LOCAL_TOFU", raising=False)
    monkeypatch.setattr(tool_catalog, "REPO_ROOT", tmp_path / "wt" / "t1")
    assert ("opentofu", str(tofu)) in tool_catalog.candidates()
    monkeypatch.setattr(tool_catalog, "REPO_ROOT", tmp_path / "main")
    assert ("opentofu", str(tofu)) in tool_catalog.candidates()
