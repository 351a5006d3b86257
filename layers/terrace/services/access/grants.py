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
from typing import TYPE_CHECKING, Any

from terrace.domain.teams import Team
from terrace.services.access.permissions import (
    NOT_A_MEMBER,
    Grants,
    combine,
    project_grant_creates,
    project_level_actions,
    workspace_level_actions,
)

if TYPE_CHECKING:  # the web app's middleware imports this module: the stores are loaded with the services
    from terrace.services.access.store_projects import ProjectStore
    from terrace.services.access.store_teams import TeamStore

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
    def __init__(self, teams: TeamStore, projects: ProjectStore) -> None:
        self._teams = teams
        self._projects = projects

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
        membership = self._teams.membership(organization, user_id)
        if membership is None or membership.status != "active":  # invited: not before accepting
            return NOT_A_MEMBER
        return self._grants(organization, [t for t in self._teams.teams_of(organization) if user_id in t.users])

    def _team(self, team_id: str, organization: str) -> Grants:
        team = self._teams.team(team_id)
        if team is None or team.organization != organization:
            return NOT_A_MEMBER
        return self._grants(organization, [team])

    def _grants(self, organization: str, teams: list[Team]) -> Grants:
        if not teams:
            return Grants(member=True)
        if any(t.owners for t in teams):
            return Grants(member=True, owner=True)
        per_team: dict[str, dict[str, Any]] = {
            t.id: {"org_access": {k for k, v in t.org_access.items() if v}, "projects": {},
                   "project_admin": set(), "creates": False, "workspaces": {}}
            for t in teams
        }  # fmt: skip
        for grant in self._projects.workspace_grants(organization):
            if grant.team_id in per_team:
                actions = workspace_level_actions(grant.access, grant.fields)
                per_team[grant.team_id]["workspaces"][grant.target_id] = actions
        for grant in self._projects.project_grants(organization):
            if grant.team_id in per_team:
                g = per_team[grant.team_id]
                wa = grant.fields["workspace-access"]
                g["projects"][grant.target_id] = project_level_actions(grant.access, wa)
                g["creates"] = g["creates"] or project_grant_creates(grant.access, wa)
                if grant.access == "admin":
                    g["project_admin"].add(grant.target_id)
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
