"""A workspace's settings, project, agent pool (by name) and tags; its remote state consumers; SSH keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from terrace.migrate.engine import WORKSPACE_SETTINGS

if TYPE_CHECKING:
    from terrace.migrate.engine import Migration

RELATIONSHIPS = {"project": "projects"}


def related(item: dict[str, Any] | None, name: str) -> str | None:
    data = (((item or {}).get("relationships") or {}).get(name) or {}).get("data") or {}
    return data.get("id") if isinstance(data, dict) else None


def workspace(m: Migration, ws: dict[str, Any]) -> str | None:
    attrs, name = ws["attributes"], ws["attributes"]["name"]
    existing = m.target.get(f"/organizations/{m.org}/workspaces/{name}") if m.org_id else None
    wanted = {k: attrs[k] for k in WORKSPACE_SETTINGS if attrs.get(k) is not None}
    # the tool its runs use: a Terrace source's own; HCP Terraform and TFE run Terraform only (the target's default
    # tool may be OpenTofu, and 1.6 to 1.12 are releases of both)
    wanted["iac-platform"] = attrs.get("iac-platform") or "terraform"
    overwrites = attrs.get("setting-overwrites") or {}
    if overwrites.get("execution-mode") is False:  # inherited from the organization's default: keep it so
        wanted.pop("execution-mode", None)
    targets = {"project": m.ids.projects.get(related(ws, "project") or "")}
    pool_id = agent_pool(m, ws, name)
    if pool_id is not None:  # an attribute when written, a relationship when read (as in HCP Terraform)
        wanted["agent-pool-id"] = pool_id
    elif attrs.get("execution-mode") == "agent":
        wanted.pop("execution-mode", None)  # the pool is missing on the target: the workspace inherits for now
    relationships = {
        key: {"data": {"type": RELATIONSHIPS[key], "id": value}} for key, value in targets.items() if value is not None
    }
    # a relationship that differs counts as a changed pseudo-attribute, updated through `relationships`
    current = dict((existing or {}).get("attributes") or {})
    current["agent-pool-id"] = related(existing, "agent-pool")
    for key, value in targets.items():
        if value is not None:
            wanted[key] = value
            current[key] = related(existing, key)

    def create() -> dict[str, Any]:
        plain = {k: v for k, v in wanted.items() if k not in RELATIONSHIPS}
        body = {"data": {"type": "workspaces", "attributes": {"name": name, **plain}, "relationships": relationships}}
        return dict(m.target.request("POST", f"/organizations/{m.org}/workspaces", body)["data"])

    def update(wid: str, diff: dict[str, Any]) -> None:
        plain = {k: v for k, v in diff.items() if k not in RELATIONSHIPS}
        body = {"data": {"type": "workspaces", "attributes": plain, "relationships": relationships}}
        m.target.request("PATCH", f"/workspaces/{wid}", body)

    compared = None if existing is None else {**existing, "attributes": current}
    keys = (*WORKSPACE_SETTINGS, "iac-platform", "agent-pool-id", *RELATIONSHIPS)
    target_id = m.sync("workspace", name, wanted, compared, create, update, keys)
    m.ids.workspaces[ws["id"]] = target_id
    tags(m, name, attrs.get("tag-names") or [], existing, target_id)
    repo = attrs.get("vcs-repo") or {}
    if repo:  # an OAuth connection is the source's own: it cannot be moved
        m.report.must("VCS connection", f"{name}: {repo.get('identifier') or repo}", "connect the repository again")
    ssh_key = related(ws, "ssh-key")
    if ssh_key:  # assigned by the SSH keys step, once a key of that name exists on the target
        m.ids.ssh_keys[name] = (ssh_key, target_id, related(existing, "ssh-key"))
    return target_id


def agent_pool(m: Migration, ws: dict[str, Any], name: str) -> str | None:
    """The target's pool of the same name as the source workspace's pool (a person creates it otherwise)."""
    source_pool = related(ws, "agent-pool")
    if not source_pool or (ws["attributes"].get("setting-overwrites") or {}).get("agent-pool") is False:
        return None
    pool = m.source.get(f"/agent-pools/{source_pool}")
    pool_name = str((pool or {}).get("attributes", {}).get("name") or source_pool)
    if m.ids.target_pools is None:
        found = m.target.try_list(f"/organizations/{m.org}/agent-pools") if m.org_id else []
        m.ids.target_pools = {p["attributes"]["name"]: p["id"] for p in found or []}
    pool_id = m.ids.target_pools.get(pool_name)
    if pool_id is None:
        m.report.must("agent pool", f"{name}: {pool_name}", "create the pool, then set the workspace's execution mode")
    return pool_id


def tags(m: Migration, name: str, wanted: list[str], existing: dict[str, Any] | None, target_id: str | None) -> None:
    have = set((existing or {}).get("attributes", {}).get("tag-names") or [])
    missing = [t for t in wanted if t not in have]
    if missing:
        m.report.record("workspace tags", name, "update" if existing else "create", ", ".join(missing))
        if target_id is not None:
            body = {"data": [{"type": "tags", "attributes": {"name": t}} for t in missing]}
            m.write("POST", f"/workspaces/{target_id}/relationships/tags", body)


def remote_state_consumers(m: Migration, source_id: str, target_id: str | None) -> None:
    """The workspaces allowed to read this one's state (when it does not share it with the whole org)."""
    name = m.ids.workspace_names.get(source_id, source_id)
    path = "/workspaces/{}/relationships/remote-state-consumers"
    consumers = m.source.try_list(path.format(source_id)) or []
    have = {c["id"] for c in m.target_list(path.format(target_id), target_id)}
    for consumer in consumers:
        label = f"{name} -> {m.ids.workspace_names.get(consumer['id'], consumer['id'])}"
        if consumer["id"] not in m.ids.workspaces:
            m.report.left("remote state consumer", label, "the consumer is not migrated (outside --workspaces)")
            continue
        ref = m.ids.workspaces[consumer["id"]]
        if m.failed(ref):
            continue
        if ref is not None and ref in have:
            m.report.record("remote state consumer", label, "skip")
            continue
        m.report.record("remote state consumer", label, "create")
        if ref is not None and target_id is not None:
            m.write("POST", path.format(target_id), {"data": [{"type": "workspaces", "id": ref}]})


def ssh_keys(m: Migration) -> None:
    """SSH keys by name, for a person to re-enter (no API reveals a key); a workspace's key is assigned on the
    target once a key of that name exists there (a re-run after the person added it)."""
    keys = m.source.try_list(f"/organizations/{m.org}/ssh-keys")
    names = {k["id"]: str(k["attributes"].get("name") or k["id"]) for k in keys or []}
    found = m.target.try_list(f"/organizations/{m.org}/ssh-keys") if m.org_id else []
    on_target = {k["attributes"].get("name"): k["id"] for k in found or []}
    for key_id, name in names.items():
        users = sorted(ws for ws, (used, _t, _h) in m.ids.ssh_keys.items() if used == key_id)
        then = f", then re-run to assign it to {', '.join(users)}" if users else ""
        if name not in on_target:
            m.report.must("SSH key", name, f"re-enter the value: add the key on the target (it cannot be read){then}")
    for ws_name, (key_id, target_ws, held) in sorted(m.ids.ssh_keys.items()):
        key_name = names.get(key_id, key_id)
        ref = on_target.get(key_name)
        if m.failed(target_ws):
            continue
        if ref is None:
            if keys is None:
                m.report.must("SSH key", f"{ws_name}: {key_id}", "re-enter the key on the target and assign it")
            continue
        label = f"{ws_name} -> {key_name}"
        if held == ref:
            m.report.record("workspace SSH key", label, "skip")
            continue
        m.report.record("workspace SSH key", label, "update" if held else "create")
        if target_ws is not None:
            body = {"data": {"type": "workspaces", "attributes": {"id": ref}}}
            m.write("PATCH", f"/workspaces/{target_ws}/relationships/ssh-key", body)
