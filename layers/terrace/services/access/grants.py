"""Reads what a caller holds in an organization from the table (the `AccessResolver` of `authz.py`).

A user's grants cost one read (their membership) for a non-member, and three queries more for a
member (the organization's teams, team-workspace and team-project grants), remembered for the rest of
the request (`request_scope`) and never longer: a change of team, membership or access counts from
the next request on.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from terrace.adapters.table import Table
from terrace.services.access import access_keys as keys
from terrace.services.access.permissions import (
    NOT_A_MEMBER,
    Grants,
    combine,
    project_grant_creates,
    project_level_actions,
    workspace_level_actions,
)

_memo: contextvars.ContextVar[dict[tuple[str, str, str], Grants] | None] = contextvars.ContextVar(
    "terrace_grants_memo", default=None
)


@contextmanager
def request_scope() -> Iterator[None]:
    """Remember grants read during one request (entered by the web app's middleware)."""
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


def forget() -> None:
    """Drop what this request remembered (after a change of teams or access)."""
    memo = _memo.get()
    if memo is not None:
        memo.clear()


class TableAccessResolver:
    def __init__(self, table: Table) -> None:
        self._table = table

    def user_grants(self, user_id: str, organization: str) -> Grants:
        return self._remembered(("user", user_id, organization), lambda: self._user(user_id, organization))

    def team_grants(self, team_id: str, organization: str) -> Grants:
        return self._remembered(("team", team_id, organization), lambda: self._team(team_id, organization))

    @staticmethod
    def _remembered(key: tuple[str, str, str], read: Any) -> Grants:
        memo = _memo.get()
        if memo is not None and key in memo:
            return memo[key]
        grants: Grants = read()
        if memo is not None:
            memo[key] = grants
        return grants

    def _user(self, user_id: str, organization: str) -> Grants:
        membership = self._table.get(*keys.membership_key(organization, user_id))
        if membership is None or membership.get("status", "active") != "active":  # invited: not before accepting
            return NOT_A_MEMBER
        teams = [t for t in self._table.query(keys.teams_index(organization), index="gsi1") if user_id in t["users"]]
        return self._grants(organization, teams)

    def _team(self, team_id: str, organization: str) -> Grants:
        team = self._table.get(*keys.team_key(team_id))
        if team is None or team["organization"] != organization:
            return NOT_A_MEMBER
        return self._grants(organization, [team])

    def _grants(self, organization: str, teams: list[dict[str, Any]]) -> Grants:
        if not teams:
            return Grants(member=True)
        if any(t.get("owners") for t in teams):
            return Grants(member=True, owner=True)
        ids = {t["id"] for t in teams}
        per_team: dict[str, dict[str, Any]] = {
            t["id"]: {"org_access": {k for k, v in t.get("org_access", {}).items() if v}, "projects": {},
                      "project_admin": set(), "creates": False, "workspaces": {}}
            for t in teams
        }  # fmt: skip
        for item in self._table.query(keys.team_workspaces_index(organization), index="gsi1"):
            if item["team_id"] in ids:
                actions = workspace_level_actions(item["access"], item.get("fields", {}))
                per_team[item["team_id"]]["workspaces"][item["workspace_id"]] = actions
        for item in self._table.query(keys.team_projects_index(organization), index="gsi1"):
            if item["team_id"] in ids:
                g = per_team[item["team_id"]]
                wa = item.get("workspace_access", {})
                g["projects"][item["project_id"]] = project_level_actions(item["access"], wa)
                g["creates"] = g["creates"] or project_grant_creates(item["access"], wa)
                if item["access"] == "admin":
                    g["project_admin"].add(item["project_id"])
        return combine(
            [
                Grants(
                    member=True,
                    org_access=frozenset(g["org_access"]),
                    projects=g["projects"],
                    project_admin=frozenset(g["project_admin"]),
                    creates_workspaces=g["creates"],
                    workspaces=g["workspaces"],
                )
                for g in per_team.values()
            ]
        )
