"""Registry modules and their versions: each private module's versions are downloaded from the source through the
module registry protocol (as `terraform init` does: service discovery, `/download`, the `X-Terraform-Get`
archive) and uploaded to the target through the registry-modules API (a version, then its `links.upload`), byte for
byte. A version the target already holds is skipped; one it holds unread (`pending`: a migration stopped between
creating it and uploading) gets its archive again. A public module (a reference to a public registry's module)
is created as such."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from terrace.migrate.client import ApiError
from terrace.migrate.engine import REFUSALS

if TYPE_CHECKING:
    from terrace.migrate.engine import Migration

PENDING, OK = "pending", "ok"


def run(m: Migration) -> None:
    source_modules = m.source.try_list(f"/organizations/{m.org}/registry-modules")
    if source_modules is None:
        m.report.left("registry modules", "*", "the source token may not read the registry (manage-modules)")
        return
    existing = {_address(t): t for t in m.target_list(f"/organizations/{m.org}/registry-modules", m.org_id)}
    for module in sorted(source_modules, key=_address):
        _module(m, module, existing.get(_address(module)))


def _address(module: dict[str, Any]) -> tuple[str, str, str, str]:
    a = module["attributes"]
    return (a.get("registry-name") or "private", a.get("namespace") or "", a["name"], a["provider"])


def _module(m: Migration, module: dict[str, Any], existing: dict[str, Any] | None) -> None:
    registry, namespace, name, provider = _address(module)
    label = f"{registry}/{namespace}/{name}/{provider}"
    wanted = {"name": name, "provider": provider, "registry-name": registry, "namespace": namespace or m.org}

    def create() -> dict[str, Any]:
        body = {"data": {"type": "registry-modules", "attributes": wanted}}
        return dict(m.target.request("POST", f"/organizations/{m.org}/registry-modules", body)["data"])

    target_id = m.sync("registry module", label, wanted, existing, create, lambda _i, _d: None, ())
    if m.failed(target_id) or registry != "private":
        return
    if module["attributes"].get("vcs-repo"):
        m.report.must("registry module", label, "it was published from VCS: publish new versions through the API")
    have = {s["version"]: s.get("status") for s in (existing or {}).get("attributes", {}).get("version-statuses") or []}
    for status in module["attributes"].get("version-statuses") or []:
        version = status["version"]
        if status.get("status") != OK:
            m.report.left("registry module version", f"{label} {version}", f"{status.get('status')} on the source")
            continue
        held = have.get(version)
        if held == OK:
            m.report.record("registry module version", f"{label} {version}", "skip")
            continue
        if held is not None and held != PENDING:
            m.report.record("registry module version", f"{label} {version}", "fail", f"{held} on the target")
            continue
        action = "update" if held == PENDING else "create"
        if m.options.dry_run or target_id is None:
            m.report.record("registry module version", f"{label} {version}", action)
            continue
        try:
            archive = download(m, namespace, name, provider, version)
            upload_url = _version_upload(m, (namespace, name, provider), version, created=held is None)
            if upload_url:
                m.target.put_bytes(upload_url, archive)
        except ApiError as exc:  # one version the source will not hand over or the target refuses
            if exc.status not in (*REFUSALS, 413):
                raise
            m.report.record("registry module version", f"{label} {version}", "fail", str(exc))
            continue
        m.report.record("registry module version", f"{label} {version}", action, f"{len(archive)} bytes")


def download(m: Migration, namespace: str, name: str, provider: str, version: str) -> bytes:
    """A version's archive from the source, through the module registry protocol."""
    base = m.source.service("modules.v1", "/api/registry/v1/modules/")
    path = "/".join(quote(p, safe="") for p in (namespace, name, provider, version))
    url = f"{base.rstrip('/')}/{path}/download"
    location = m.source.terraform_get(url)
    if not location.startswith(("https://", "http://")):  # a go-getter address (git::, s3::): no HTTP archive
        raise ApiError("source", "GET", url, 409, f"the archive is at {location}: publish this version by hand")
    return m.source.download(location)


def _version_upload(m: Migration, address: tuple[str, str, str], version: str, created: bool) -> str | None:
    """The target version's upload link: a new version's, or (pending) the one it already has."""
    namespace, name, provider = address
    base = f"/organizations/{m.org}/registry-modules/private/{namespace}/{name}/{provider}"
    if created:
        body = {"data": {"type": "registry-module-versions", "attributes": {"version": version}}}
        try:
            document = m.target.request("POST", f"{base}/versions", body)
        except ApiError as exc:
            if exc.status != 409:  # created meanwhile: its upload link is read below
                raise
        else:
            return (document["data"].get("links") or {}).get("upload")
    found = m.target.get(f"{base}/version", {"module_version": version}) or {}
    return (found.get("links") or {}).get("upload")
