"""A workspace's state history: every version oldest first (or the current one), serial and lineage kept.

Uploaded through the state-versions API with the target workspace locked, as terraform does; a version the
target already holds (same serial and lineage) is skipped, so a re-run resumes where a failure stopped."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import TYPE_CHECKING, Any

from terrace.migrate.client import ApiError
from terrace.migrate.progress import steps

if TYPE_CHECKING:
    from terrace.migrate.engine import Migration

LOCK_REASON = "terrace migrate: copying the state history"


def history(migration: Migration, side: str, workspace_name: str) -> list[dict[str, Any]]:
    """A workspace's state versions, oldest first (the API lists them newest first)."""
    api = migration.source if side == "source" else migration.target
    params = {"filter[organization][name]": migration.org, "filter[workspace][name]": workspace_name}
    versions = api.pages("/state-versions", params)
    return sorted(versions, key=lambda v: (int(v["attributes"]["serial"]), str(v["attributes"].get("created-at"))))


def lineage_of(migration: Migration, side: str, version: dict[str, Any], cache: dict[str, bytes]) -> str:
    """A version's lineage: its attribute (Terrace) or, from servers without it, its file's."""
    lineage = version["attributes"].get("lineage")
    if lineage:
        return str(lineage)
    return str(json.loads(content(migration, side, version, cache)).get("lineage") or "")


def content(migration: Migration, side: str, version: dict[str, Any], cache: dict[str, bytes]) -> bytes:
    if version["id"] not in cache:
        url = version["attributes"].get("hosted-state-download-url")
        if not url:
            raise ApiError(side, "GET", f"state version {version['id']}", 409, "its state file cannot be downloaded")
        api = migration.source if side == "source" else migration.target
        cache[version["id"]] = api.download(url)
    return cache[version["id"]]


def copy(migration: Migration, ws: dict[str, Any], target_id: str | None) -> None:
    name, report = ws["attributes"]["name"], migration.report
    versions = []
    for version in history(migration, "source", name):
        if version["attributes"].get("hosted-state-download-url"):
            versions.append(version)
        else:  # pending, discarded, or its data deleted by a retention policy
            serial = version["attributes"].get("serial")
            report.warn(f"{name}: state version #{serial} ({version['id']}) has no file to download: left behind")
    if migration.options.state == "current" and versions:
        versions = versions[-1:]
    cache: dict[str, bytes] = {}
    present: set[tuple[int, str]] = set()
    if target_id is not None:
        target_cache: dict[str, bytes] = {}
        present = {
            (int(v["attributes"]["serial"]), lineage_of(migration, "target", v, target_cache))
            for v in history(migration, "target", name)
        }
    missing = []
    for version in versions:
        key = (int(version["attributes"]["serial"]), lineage_of(migration, "source", version, cache))
        if key in present:
            cache.pop(version["id"], None)  # downloaded only to read its lineage (a server without the attribute)
            report.record("state version", f"{name} #{key[0]}", "skip")
        else:
            missing.append((version, key))
    if not missing:
        return
    if migration.options.dry_run or target_id is None:
        for _version, (serial, lineage) in missing:
            report.record("state version", f"{name} #{serial}", "create", f"lineage {lineage}")
        return
    lock(migration, target_id, name)
    try:
        with steps(f"{name} state versions", len(missing), report.out) as advance:
            for version, (serial, lineage) in missing:
                upload(migration, target_id, content(migration, "source", version, cache), serial, lineage)
                cache.pop(version["id"], None)
                report.record("state version", f"{name} #{serial}", "create", f"lineage {lineage}")
                advance()
    finally:
        try:
            migration.target.request("POST", f"/workspaces/{target_id}/actions/unlock", {})
        except ApiError as exc:  # the upload's own error, if any, is the one to report
            report.warn(f"{name}: could not unlock the target workspace ({exc}): unlock it by hand")


def lock(migration: Migration, target_id: str, name: str) -> None:
    """Lock the target workspace; a lock of a migration that was stopped (killed) is taken over."""
    current = migration.target.get(f"/workspaces/{target_id}") or {}
    attrs = current.get("attributes") or {}
    if attrs.get("locked") and attrs.get("locked-reason") == LOCK_REASON:
        migration.report.warn(f"{name}: resuming under the lock an interrupted migration left on the target")
        return
    body = {"data": {"type": "workspaces", "attributes": {"reason": LOCK_REASON}}}
    try:
        migration.target.request("POST", f"/workspaces/{target_id}/actions/lock", body)
    except ApiError as exc:
        if exc.status == 409:
            raise ApiError(
                "target", "POST", f"workspace {name} lock", 409, "locked on the target: unlock it and re-run"
            ) from None
        raise


def upload(migration: Migration, target_id: str, state: bytes, serial: int, lineage: str) -> None:
    attributes = {
        "serial": serial,
        "lineage": lineage,
        "md5": hashlib.md5(state).hexdigest(),  # noqa: S324 (the API's checksum, not security)
        "state": base64.b64encode(state).decode(),
    }
    created = migration.target.request(
        "POST",
        f"/workspaces/{target_id}/state-versions",
        {"data": {"type": "state-versions", "attributes": attributes}},
    )
    upload_url = created["data"]["attributes"].get("hosted-state-upload-url")
    if created["data"]["attributes"].get("status") == "pending" and upload_url:
        migration.target.put_bytes(upload_url, state)
