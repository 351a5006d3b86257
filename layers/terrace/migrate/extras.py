"""Organization-wide objects after the workspaces: variable sets and their scopes, teams and their access,
run triggers, notification configurations, SSH keys (listed), policies and registry modules; and the list of
what does not move."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from terrace.migrate import modules, policies
from terrace.migrate.client import ApiError
from terrace.migrate.workspaces import remote_state_consumers, ssh_keys

if TYPE_CHECKING:
    from terrace.migrate.engine import Migration

VARSET_SETTINGS = ("description", "global", "priority")
TEAM_ACCESS = ("access", "runs", "variables", "state-versions", "sentinel-mocks", "workspace-locking", "run-tasks")


def run(m: Migration) -> None:
    varsets(m)
    teams(m)
    for source_id, target_id in list(m.ids.workspaces.items()):
        if m.failed(target_id):
            continue
        remote_state_consumers(m, source_id, target_id)
        run_triggers(m, source_id, target_id)
        notifications(m, source_id, target_id)
    ssh_keys(m)
    policies.run(m)
    modules.run(m)
    not_moved(m)


def _ids(item: dict[str, Any], relationship: str) -> list[str]:
    data = ((item.get("relationships") or {}).get(relationship) or {}).get("data") or []
    return [d["id"] for d in (data if isinstance(data, list) else [data])]


def varsets(m: Migration) -> None:
    existing = {v["attributes"]["name"]: v for v in m.target_list(f"/organizations/{m.org}/varsets", m.org_id)}
    for varset in m.source.pages(f"/organizations/{m.org}/varsets"):
        attrs, name = varset["attributes"], varset["attributes"]["name"]
        wanted = {k: attrs[k] for k in ("name", *VARSET_SETTINGS) if k in attrs}

        def create(wanted: dict[str, Any] = wanted) -> dict[str, Any]:
            body = {"data": {"type": "varsets", "attributes": wanted}}
            return dict(m.target.request("POST", f"/organizations/{m.org}/varsets", body)["data"])

        def update(vid: str, diff: dict[str, Any]) -> None:
            m.target.request("PATCH", f"/varsets/{vid}", {"data": {"type": "varsets", "attributes": diff}})

        target_id = m.sync("variable set", name, wanted, existing.get(name), create, update, VARSET_SETTINGS)
        if m.failed(target_id):
            continue
        m.sync_variables(
            f"variable set {name}",
            m.source.pages(f"/varsets/{varset['id']}/relationships/vars"),
            m.target_list(f"/varsets/{target_id}/relationships/vars", target_id),
            functools.partial("/varsets/{}/relationships/vars".format, target_id),
        )
        have = existing.get(name) or {}
        for kind, mapping in (("workspaces", m.ids.workspaces), ("projects", m.ids.projects)):
            present = set(_ids(have, kind))
            for source_ref in _ids(varset, kind):
                if source_ref not in mapping:
                    continue  # a workspace outside --workspaces
                ref = mapping[source_ref]
                if m.failed(ref) or (ref is not None and ref in present):
                    continue
                m.report.record("variable set scope", f"{name} -> {kind[:-1]} {_name(m, kind, source_ref)}", "create")
                if ref is not None and target_id is not None:
                    body = {"data": [{"type": kind, "id": ref}]}
                    m.write("POST", f"/varsets/{target_id}/relationships/{kind}", body)


def _name(m: Migration, kind: str, source_id: str) -> str:
    names = m.ids.workspace_names if kind == "workspaces" else m.ids.names
    return names.get(source_id, source_id)


def teams(m: Migration) -> None:
    existing = {t["attributes"]["name"]: t for t in m.target_list(f"/organizations/{m.org}/teams", m.org_id)}
    source_teams = m.source.try_list(f"/organizations/{m.org}/teams")
    if source_teams is None:
        m.report.left("teams", "*", "the source token may not list teams (an owners' team token is needed)")
        return
    emails = _member_emails(m)
    # the organization permissions the target knows (its teams show them all); a dry run's new org: the source's
    known = {k for t in existing.values() for k in (t["attributes"].get("organization-access") or {})} or None
    for team in source_teams:
        attrs, name = team["attributes"], team["attributes"]["name"]
        m.ids.names[team["id"]] = name
        wanted = {k: attrs[k] for k in ("name", "visibility") if attrs.get(k) is not None}
        if name != "owners":  # the owners team may do everything, everywhere
            wanted["organization-access"] = _org_access(m, name, attrs.get("organization-access") or {}, known)

        def create(wanted: dict[str, Any] = wanted) -> dict[str, Any]:
            body = {"data": {"type": "teams", "attributes": wanted}}
            return dict(m.target.request("POST", f"/organizations/{m.org}/teams", body)["data"])

        def update(tid: str, diff: dict[str, Any]) -> None:
            m.target.request("PATCH", f"/teams/{tid}", {"data": {"type": "teams", "attributes": diff}})

        m.ids.teams[team["id"]] = m.sync(
            "team", name, wanted, existing.get(name), create, update, ("visibility", "organization-access")
        )
        for user_id in _ids(team, "users"):
            who = emails.get(user_id) or _username(m, user_id)
            m.report.must("team membership", f"{name}: {who}", "invite this person to the team on the target")
    for source_ws, target_ws in m.ids.workspaces.items():
        _access(m, "workspace", source_ws, target_ws, m.ids.workspace_names.get(source_ws, source_ws))
    for source_project, target_project in m.ids.projects.items():
        _access(m, "project", source_project, target_project, m.ids.names.get(source_project, source_project))


def _org_access(m: Migration, team: str, access: dict[str, Any], known: set[str] | None) -> dict[str, bool]:
    """The permissions the target knows; one it does not know, granted on the source, is listed for review."""
    kept = {}
    for key, value in access.items():
        if known is None or key in known:
            kept[key] = bool(value)
        elif value:
            m.report.must("team permission", f"{team}: {key}", "the target has no such permission: review the team")
    return kept


def _member_emails(m: Migration) -> dict[str, str]:
    members: list[dict[str, Any]] = m.source.try_list(f"/organizations/{m.org}/organization-memberships") or []
    found = {}
    for member in members:
        for user_id in _ids(member, "user"):
            found[user_id] = str(member["attributes"].get("email") or user_id)
    return found


def _username(m: Migration, user_id: str) -> str:
    try:
        user = m.source.get(f"/users/{user_id}")
    except ApiError:
        user = None
    return str((user or {}).get("attributes", {}).get("username") or user_id)


def _access(m: Migration, kind: str, source_id: str, target_id: str | None, label: str) -> None:
    """Team grants on one workspace or project (team-workspaces / team-projects), matched by team."""
    collection = f"/team-{kind}s"
    grants: list[dict[str, Any]] = m.source.try_list(collection, {f"filter[{kind}][id]": source_id}) or []
    have = {}
    for grant in m.target_list(collection, target_id, {f"filter[{kind}][id]": target_id}):
        for team_id in _ids(grant, "team"):
            have[team_id] = grant
    for grant in grants:
        source_team = (_ids(grant, "team") or [""])[0]
        if source_team not in m.ids.teams:
            continue
        target_team = m.ids.teams[source_team]
        if m.failed(target_team):
            continue
        attrs = grant["attributes"]
        keys = TEAM_ACCESS if attrs.get("access") == "custom" else ("access",)
        wanted = {k: attrs[k] for k in keys if k in attrs}
        relationships = {
            "team": {"data": {"type": "teams", "id": target_team}},
            kind: {"data": {"type": f"{kind}s", "id": target_id}},
        }

        def create(wanted: dict[str, Any] = wanted, relationships: dict[str, Any] = relationships) -> dict[str, Any]:
            body = {"data": {"type": collection[1:], "attributes": wanted, "relationships": relationships}}
            return dict(m.target.request("POST", collection, body)["data"])

        def update(gid: str, diff: dict[str, Any]) -> None:
            m.target.request("PATCH", f"{collection}/{gid}", {"data": {"type": collection[1:], "attributes": diff}})

        existing = have.get(target_team) if target_team else None
        m.sync(
            f"team {kind} access",
            f"{label}: team {m.ids.names.get(source_team, source_team)}",
            wanted,
            existing,
            create,
            update,
            keys,
        )


def run_triggers(m: Migration, source_id: str, target_id: str | None) -> None:
    name = m.ids.workspace_names.get(source_id, source_id)
    params = {"filter[run-trigger][type]": "inbound"}
    have = {
        ref
        for t in m.target_list(f"/workspaces/{target_id}/run-triggers", target_id, params)
        for ref in _ids(t, "sourceable")
    }
    for trigger in m.source.pages(f"/workspaces/{source_id}/run-triggers", params):
        source_ref = (_ids(trigger, "sourceable") or [""])[0]
        label = f"{m.ids.workspace_names.get(source_ref, source_ref)} -> {name}"
        if source_ref not in m.ids.workspaces:
            m.report.left("run trigger", label, "its source workspace is not migrated (outside --workspaces)")
            continue
        ref = m.ids.workspaces[source_ref]
        if m.failed(ref):
            continue
        if ref is not None and ref in have:
            m.report.record("run trigger", label, "skip")
            continue
        m.report.record("run trigger", label, "create")
        if ref is not None and target_id is not None:
            body = {"data": {"relationships": {"sourceable": {"data": {"type": "workspaces", "id": ref}}}}}
            m.write("POST", f"/workspaces/{target_id}/run-triggers", body)


def notifications(m: Migration, source_id: str, target_id: str | None) -> None:
    name = m.ids.workspace_names.get(source_id, source_id)
    path = "/workspaces/{}/notification-configurations"
    existing = {n["attributes"]["name"]: n for n in m.target_list(path.format(target_id), target_id)}
    configs: list[dict[str, Any]] = m.source.try_list(path.format(source_id)) or []
    for config in configs:
        attrs = config["attributes"]
        keys = ("destination-type", "enabled", "url", "triggers", "email-addresses")
        wanted = {k: attrs[k] for k in ("name", *keys) if attrs.get(k) is not None}
        label = f"{name}: {attrs['name']}"
        if attrs.get("destination-type") in ("generic", "slack", "microsoft-teams"):
            m.report.must("notification", label, "re-enter its token (write-only on the source)")
        if _ids(config, "users"):
            m.report.must("notification", label, "add its email recipients (users) once they have joined")

        def create(wanted: dict[str, Any] = wanted) -> dict[str, Any]:
            body = {"data": {"type": "notification-configurations", "attributes": wanted}}
            return dict(m.target.request("POST", path.format(target_id), body)["data"])

        def update(nid: str, diff: dict[str, Any]) -> None:
            body = {"data": {"type": "notification-configurations", "attributes": diff}}
            m.target.request("PATCH", f"/notification-configurations/{nid}", body)

        m.sync("notification", label, wanted, existing.get(attrs["name"]), create, update, keys)


def not_moved(m: Migration) -> None:
    """What this version does not copy, by name, so the report says what a person must recreate."""
    listings = [
        ("agent pool", f"/organizations/{m.org}/agent-pools", "create the pool and register its agents"),
    ]
    for kind, path, why in listings:
        try:
            items: list[dict[str, Any]] = m.source.try_list(path) or []
        except ApiError as exc:
            m.report.warn(f"could not list {kind}s on the source: {exc}")
            continue
        for item in items:
            attrs = item.get("attributes") or {}
            m.report.left(kind, str(attrs.get("name") or item["id"]), why)
