"""SCIM groups (`/scim/v2/Groups`) and what they govern.

A group's members are SCIM users. Each team mapped to a group (`admin/teams/:id/scim-group-mapping`, unless its
sync is paused) has exactly the group's active members, each made an active member of the team's organization;
the site admin group (`admin/scim-settings`) grants its members the site-admin right and revokes it from those
who leave. A change of members, of a member's `active`, a mapping, or a group's deletion (which unlinks its
teams) brings the teams up to date at once."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from terrace.domain import clock
from terrace.domain import scim as model
from terrace.domain.errors import NotFound
from terrace.domain.ids import new_id
from terrace.domain.teams import ScimLink, Team
from terrace.services.access.accounts import AccountService
from terrace.services.access.memberships import MembershipService
from terrace.services.access.teams import TeamService
from terrace.services.access.users import UserService
from terrace.services.admin.scim_users import ScimUsers, require_enabled
from terrace.services.admin.settings import AdminSettings
from terrace.services.admin.store_scim import ScimStore
from terrace.services.optimistic import optimistic


class ScimGroups:
    def __init__(
        self,
        store: ScimStore,
        settings: AdminSettings,
        scim_users: Callable[[], ScimUsers],
        teams: TeamService,
        memberships: MembershipService,
        accounts: AccountService,
        users: UserService,
        public_url: str,
    ) -> None:
        self._store, self._settings, self._scim_users = store, settings, scim_users
        self._teams, self._memberships, self._accounts, self._users = teams, memberships, accounts, users
        self._url = public_url.rstrip("/")

    # the SCIM protocol ---------------------------------------------------------------------------------------
    def get(self, scim_id: str, exclude_members: bool = False) -> dict[str, Any]:
        require_enabled(self._settings, change=False)
        return self.shown(self.load(scim_id), exclude_members)

    def list(self, filter_text: str | None, start: str | None, count: str | None, exclude_members: bool = False
             ) -> dict[str, Any]:  # fmt: skip
        require_enabled(self._settings, change=False)
        if filter_text:
            model.parse_filter(filter_text)  # a bad filter is refused even when nothing is stored
        found = [shown for r in self._store.list("group") if model.matches(shown := self.shown(r), filter_text)]
        items, first, _size = model.page(found, start, count)
        if exclude_members:
            items = [{k: v for k, v in item.items() if k != "members"} for item in items]
        return model.list_response(items, len(found), first)

    def create(self, body: Any) -> dict[str, Any]:
        require_enabled(self._settings, change=True)
        attrs = self._attributes(body)
        now = clock.now_iso()
        record = {"id": new_id("scimg"), "display_name": attrs["displayName"], "attributes": attrs,
                  "team_ids": [], "created_at": now, "updated_at": now}  # fmt: skip
        self._store.create("group", record)
        self._govern({**record, "version": 1}, [])
        return self.shown({**record, "version": 1})

    def replace(self, scim_id: str, body: Any) -> dict[str, Any]:
        return self._change(scim_id, lambda _current: self._attributes(body))

    def patch(self, scim_id: str, body: Any) -> dict[str, Any]:
        return self._change(scim_id, lambda current: self._attributes(model.apply_patch(current, body)))

    def delete(self, scim_id: str) -> None:
        require_enabled(self._settings, change=True)
        self.forget(self.load(scim_id))

    # what other parts of SCIM use ----------------------------------------------------------------------------
    def forget(self, record: dict[str, Any]) -> None:
        """Delete a group: its teams are unlinked (they keep their members), its site-admin grant ends."""
        for team_id in record.get("team_ids", []):
            try:
                team = self._teams.load(team_id)
            except NotFound:
                continue
            if team.scim is not None and team.scim.group_id == record["id"]:
                self._teams.write_scim(team, None)
        self._govern({**record, "attributes": {**record["attributes"], "members": []}}, self._members(record))
        self._store.delete("group", record)

    def load(self, scim_id: str) -> dict[str, Any]:
        record = self._store.get("group", scim_id) if isinstance(scim_id, str) else None
        if record is None:
            raise NotFound(f"no SCIM group {scim_id}")
        return record

    def link(self, team: Team, record: dict[str, Any], paused: bool) -> Team:
        """Map `team` to the group (or change its pause) and bring its members up to date unless paused."""
        link = ScimLink(record["id"], record["display_name"], paused, clock.now_iso())
        team = self._teams.write_scim(team, link)
        if team.id not in record.get("team_ids", []):
            self._edit(record["id"], lambda r: {**r, "team_ids": [*r.get("team_ids", []), team.id]})
        if not paused:
            team = self._sync_team(team, self._active_user_ids(self._members(record)))
        return team

    def unlink(self, team: Team) -> Team:
        if team.scim is None:
            return team
        group_id = team.scim.group_id
        team = self._teams.write_scim(team, None)
        if self._store.get("group", group_id) is not None:
            self._edit(group_id, lambda r: {**r, "team_ids": [t for t in r.get("team_ids", []) if t != team.id]})
        return team

    def resync_user(self, scim_user_id: str) -> None:
        """A member's `active` changed: every group they are in governs again."""
        for record in self._store.list("group"):
            if scim_user_id in self._members(record):
                self._govern(record, [])

    def shown(self, record: dict[str, Any], exclude_members: bool = False) -> dict[str, Any]:
        attrs = dict(record["attributes"])
        if exclude_members:
            attrs.pop("members", None)
        return {
            "schemas": [model.GROUP],
            "id": record["id"],
            **attrs,
            "meta": {"resourceType": "Group", "created": record["created_at"], "lastModified": record["updated_at"],
                     "location": f"{self._url}/scim/v2/Groups/{record['id']}", "version": f'W/"{record["version"]}"'},
        }  # fmt: skip

    # helpers -------------------------------------------------------------------------------------------------
    def _change(self, scim_id: str, decide: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        require_enabled(self._settings, change=True)
        before: builtins.list[str] = []

        def change(record: dict[str, Any]) -> dict[str, Any]:
            nonlocal before
            before = self._members(record)
            attrs = decide(self.shown(record))
            return {**record, "display_name": attrs["displayName"], "attributes": attrs}

        written = self._edit(scim_id, change)
        for team_id in written.get("team_ids", []):  # a new name shows on the teams
            try:
                team = self._teams.load(team_id)
            except NotFound:
                continue
            if team.scim and team.scim.group_name != written["display_name"]:
                link = ScimLink(team.scim.group_id, written["display_name"], team.scim.sync_paused, clock.now_iso())
                self._teams.write_scim(team, link)
        self._govern(written, before)
        return self.shown(written)

    def _edit(self, scim_id: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        def step() -> dict[str, Any]:
            record = self.load(scim_id)
            changed = {**change(record), "updated_at": clock.now_iso()}
            return self._store.replace("group", changed, record["display_name"])

        return optimistic(step, exhausted="the SCIM group changed concurrently; retry")

    def _govern(self, record: dict[str, Any], members_before: builtins.list[str]) -> None:
        """Bring the group's teams and (for the site admin group) the site-admin right up to date."""
        active = self._active_user_ids(self._members(record))
        for team_id in record.get("team_ids", []):
            try:
                team = self._teams.load(team_id)
            except NotFound:
                continue
            if team.scim is not None and team.scim.group_id == record["id"] and not team.scim.sync_paused:
                self._sync_team(team, active)
        if self._settings.scim_state()["site-admin-group-scim-id"] == record["id"]:
            left = set(self._active_user_ids(members_before)) - set(active)
            for user_id in active:
                self._users.set_flags(user_id, site_admin=True)
            for user_id in left:
                self._users.set_flags(user_id, site_admin=False)

    def _sync_team(self, team: Team, user_ids: builtins.list[str]) -> Team:
        for user_id in user_ids:
            self._memberships.ensure(team.organization, self._accounts.get_user(user_id))
        if set(team.users) == set(user_ids):
            return team
        link = team.scim
        team = self._teams.write_members(team, set(user_ids))
        if link is not None:  # the sync's time shows as the team's scim-updated-at
            team = self._teams.write_scim(team, ScimLink(link.group_id, link.group_name, link.sync_paused,
                                                         clock.now_iso()))  # fmt: skip
        return team

    def _members(self, record: dict[str, Any]) -> builtins.list[str]:
        members = record["attributes"].get("members") or []
        return [str(m["value"]) for m in members if isinstance(m, dict) and isinstance(m.get("value"), str)]

    def _active_user_ids(self, scim_ids: builtins.list[str]) -> builtins.list[str]:
        found = self._scim_users().user_ids(scim_ids)
        return sorted({user_id for user_id, active in found.values() if active})

    def _attributes(self, body: Any) -> dict[str, Any]:
        body = model.bounded(body)
        attrs = {key: value for key in model.GROUP_ATTRIBUTES if (value := model.attribute(body, key)) is not None}
        name = attrs.get("displayName")
        if not isinstance(name, str) or not name.strip() or len(name) > 256:
            raise model.InvalidValue("displayName is required (at most 256 characters)")
        members = attrs.get("members", [])
        if not isinstance(members, list) or not all(isinstance(m, dict) and isinstance(m.get("value"), str)
                                                     for m in members):  # fmt: skip
            raise model.InvalidValue("members must be a list of {value: <SCIM user id>}")
        known = self._scim_users().user_ids([m["value"] for m in members])
        unknown = sorted({m["value"] for m in members} - set(known))
        if unknown:
            raise model.InvalidValue(f"no SCIM user {unknown[0]}")
        kept = ("value", "display", "type", "$ref")
        attrs["members"] = [{k: m[k] for k in kept if isinstance(m.get(k), str)}
                            for m in {m["value"]: m for m in members}.values()]  # fmt: skip
        return attrs
