"""Policies and policy sets, OPA and Sentinel alike (a Sentinel policy is moved as a stored object): each policy's
settings and text (downloaded, re-uploaded when the target's differs); each set's settings, its policies, the
workspaces, projects and exclusions it is scoped to (matched by name), and its parameters (sensitive values
listed for re-entry). A set whose policies come from a VCS repository or an uploaded version is created with its
settings and scopes and listed: its policies must be connected or uploaded again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from terrace.migrate.client import ApiError
from terrace.migrate.engine import REFUSALS
from terrace.migrate.workspaces import related

if TYPE_CHECKING:
    from terrace.migrate.engine import Migration

POLICY_SETTINGS = ("description", "enforcement-level", "query")
# `policies-path` and `policy-update-pattern` belong to a VCS repository, which does not move
SET_SETTINGS = ("description", "global", "overridable", "agent-enabled", "policy-tool-version")
SCOPES = {"workspaces": "workspace", "workspace-exclusions": "workspace", "projects": "project"}
MEMBER_TYPES = {"policies": "policies", "workspaces": "workspaces", "workspace-exclusions": "workspaces",
                "projects": "projects"}  # fmt: skip


def run(m: Migration) -> None:
    source_policies = m.source.try_list(f"/organizations/{m.org}/policies")
    if source_policies is None:
        m.report.left("policies", "*", "the source token may not read policies (manage-policies is needed)")
        return
    existing = {p["attributes"]["name"]: p for p in m.target_list(f"/organizations/{m.org}/policies", m.org_id)}
    policy_ids: dict[str, str | None] = {}
    for policy in source_policies:
        policy_ids[policy["id"]] = _policy(m, policy, existing.get(policy["attributes"]["name"]))
    names = {p["id"]: p["attributes"]["name"] for p in source_policies}
    sets = {s["attributes"]["name"]: s for s in m.target_list(f"/organizations/{m.org}/policy-sets", m.org_id)}
    for policy_set in m.source.try_list(f"/organizations/{m.org}/policy-sets") or []:
        _policy_set(m, policy_set, sets.get(policy_set["attributes"]["name"]), policy_ids, names)


def _level(attrs: dict[str, Any]) -> str | None:
    """The enforcement level: the attribute, or the deprecated `enforce` list's mode (older servers)."""
    enforce = attrs.get("enforce") or []
    return attrs.get("enforcement-level") or (enforce[0].get("mode") if enforce else None)


def _policy(m: Migration, policy: dict[str, Any], existing: dict[str, Any] | None) -> str | None:
    attrs, name = policy["attributes"], policy["attributes"]["name"]
    kind = attrs.get("kind") or "sentinel"
    wanted = {"name": name, "kind": kind, "description": attrs.get("description") or ""}
    wanted["enforcement-level"] = _level(attrs)
    if kind == "opa" and attrs.get("query"):
        wanted["query"] = attrs["query"]

    def create() -> dict[str, Any]:
        body = {"data": {"type": "policies", "attributes": wanted}}
        return dict(m.target.request("POST", f"/organizations/{m.org}/policies", body)["data"])

    def update(pid: str, diff: dict[str, Any]) -> None:
        m.target.request("PATCH", f"/policies/{pid}", {"data": {"type": "policies", "attributes": diff}})

    label = f"{name} ({kind})"
    target_id = m.sync("policy", label, wanted, existing, create, update, POLICY_SETTINGS)
    if m.failed(target_id):
        return None
    text = _text(m, "source", policy)
    if text is None:
        m.report.warn(f"policy {name} has no text on the source: only its settings moved")
        return target_id
    have = _text(m, "target", existing) if existing is not None else None
    if have == text:
        m.report.record("policy text", label, "skip")
        return target_id
    if target_id is not None and not m.options.dry_run:
        try:
            m.target.put_bytes(f"{m.target.url}/api/v2/policies/{target_id}/upload", text)
        except ApiError as exc:  # e.g. Rego the target's OPA does not compile: the rest goes on
            if exc.status not in REFUSALS:
                raise
            m.report.record("policy text", label, "fail", str(exc))
            return target_id
    m.report.record("policy text", label, "update" if have is not None else "create", f"{len(text)} bytes")
    return target_id


def _text(m: Migration, side: str, policy: dict[str, Any] | None) -> bytes | None:
    """A policy's Rego or Sentinel text (its `download` link), None when it has none yet."""
    if policy is None:
        return None
    api = m.source if side == "source" else m.target
    link = (policy.get("links") or {}).get("download") or f"/api/v2/policies/{policy['id']}/download"
    try:
        return api.download(link)
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise


def _policy_set(
    m: Migration,
    policy_set: dict[str, Any],
    existing: dict[str, Any] | None,
    policy_ids: dict[str, str | None],
    policy_names: dict[str, str],
) -> None:
    attrs, name = policy_set["attributes"], policy_set["attributes"]["name"]
    kind = attrs.get("kind") or "sentinel"
    wanted = {k: attrs[k] for k in ("name", "kind", *SET_SETTINGS) if attrs.get(k) is not None}
    if kind != "opa":
        wanted.pop("overridable", None)
    if not attrs.get("agent-enabled"):  # a tool version only matters for agent-evaluated sets (Terrace drops it)
        wanted.pop("policy-tool-version", None)

    def create() -> dict[str, Any]:
        body = {"data": {"type": "policy-sets", "attributes": wanted}}
        return dict(m.target.request("POST", f"/organizations/{m.org}/policy-sets", body)["data"])

    def update(sid: str, diff: dict[str, Any]) -> None:
        m.target.request("PATCH", f"/policy-sets/{sid}", {"data": {"type": "policy-sets", "attributes": diff}})

    label = f"{name} ({kind})"
    target_id = m.sync("policy set", label, wanted, existing, create, update, SET_SETTINGS)
    if m.failed(target_id):
        return
    if attrs.get("vcs-repo"):
        m.report.must("policy set", label, "connect its VCS repository again (its policies come from there)")
    elif attrs.get("versioned") or related(policy_set, "newest-version"):
        m.report.must("policy set", label, "upload its policy set version (tarball) again: no API reads it back")
    members = {"policies": {i: policy_ids.get(i) for i in _ids(policy_set, "policies") if i in policy_ids}}
    for relation, kind_name in SCOPES.items():
        mapping = m.ids.workspaces if kind_name == "workspace" else m.ids.projects
        members[relation] = {i: mapping[i] for i in _ids(policy_set, relation) if i in mapping}
    have = existing or {}
    for relation, refs in members.items():
        present = set(_ids(have, relation))
        for source_ref, ref in refs.items():
            if m.failed(ref):
                continue
            what = _member_name(m, relation, source_ref, policy_names)
            if ref is not None and ref in present:
                m.report.record("policy set scope", f"{name} -> {what}", "skip")
                continue
            m.report.record("policy set scope", f"{name} -> {what}", "create")
            if ref is not None and target_id is not None:
                body = {"data": [{"type": MEMBER_TYPES[relation], "id": ref}]}
                m.write("POST", f"/policy-sets/{target_id}/relationships/{relation}", body)
    _parameters(m, policy_set["id"], target_id, name)


def _ids(item: dict[str, Any], relationship: str) -> list[str]:
    data = ((item.get("relationships") or {}).get(relationship) or {}).get("data") or []
    return [d["id"] for d in (data if isinstance(data, list) else [data])]


def _member_name(m: Migration, relation: str, source_id: str, policy_names: dict[str, str]) -> str:
    if relation == "policies":
        return f"policy {policy_names.get(source_id, source_id)}"
    if relation == "projects":
        return f"project {m.ids.names.get(source_id, source_id)}"
    prefix = "excluded workspace" if relation == "workspace-exclusions" else "workspace"
    return f"{prefix} {m.ids.workspace_names.get(source_id, source_id)}"


def _parameters(m: Migration, source_id: str, target_id: str | None, name: str) -> None:
    """A set's parameters (`vars` of category policy-set), matched by key; sensitive ones listed for re-entry."""
    params = m.source.try_list(f"/policy-sets/{source_id}/parameters") or []
    existing = {p["attributes"]["key"]: p for p in m.target_list(f"/policy-sets/{target_id}/parameters", target_id)}
    for param in params:
        attrs = param["attributes"]
        key, sensitive = attrs["key"], bool(attrs.get("sensitive"))
        wanted = {"key": key, "category": "policy-set", "sensitive": sensitive, "value": attrs.get("value") or ""}
        if sensitive:
            wanted["value"] = ""
            m.report.must("sensitive policy set parameter", f"{name}: {key}", "set the value (no API reveals it)")

        def create(wanted: dict[str, Any] = wanted) -> dict[str, Any]:
            body = {"data": {"type": "vars", "attributes": wanted}}
            return dict(m.target.request("POST", f"/policy-sets/{target_id}/parameters", body)["data"])

        def update(pid: str, diff: dict[str, Any]) -> None:
            body = {"data": {"type": "vars", "id": pid, "attributes": diff}}
            m.target.request("PATCH", f"/policy-sets/{target_id}/parameters/{pid}", body)

        keys = ("sensitive",) if sensitive else ("value", "sensitive")
        m.sync("policy set parameter", f"{name}: {key}", wanted, existing.get(key), create, update, keys)
