"""What every organization has from its creation: the owners team, its creator's membership, the
Default Project, the marker that its stage usage is kept (`domain/stage_usage.py`). Organizations created before
teams existed get them on first use (`ensure`)."""

from __future__ import annotations

from typing import Any

from terrace.adapters.table import ConditionFailed, Put, Table
from terrace.domain import clock, stage_usage
from terrace.domain.ids import new_id
from terrace.domain.projects import default_project_id
from terrace.domain.teams import owners_team_id
from terrace.services.access import access_keys as keys
from terrace.services.access.permissions import ORG_ACCESS_KEYS

OWNERS = "owners"
DEFAULT_PROJECT = "Default Project"


def membership_items(organization: str, user_id: str, email: str, status: str = "active") -> list[dict[str, Any]]:
    membership_id = new_id("ou")
    pk, sk = keys.membership_key(organization, user_id)
    ppk, psk = keys.membership_pointer_key(membership_id)
    now = clock.now_iso()
    return [
        {"pk": pk, "sk": sk, "id": membership_id, "organization": organization, "user_id": user_id,
         "email": email, "status": status, "created_at": now, "version": 1},
        {"pk": ppk, "sk": psk, "organization": organization, "user_id": user_id},
    ]  # fmt: skip


def team_items(organization: str, team_id: str, name: str, **fields: Any) -> list[dict[str, Any]]:
    pk, sk = keys.team_key(team_id)
    npk, nsk = keys.team_name_key(organization, name)
    team = {
        "pk": pk,
        "sk": sk,
        "id": team_id,
        "organization": organization,
        "name": name,
        "users": [],
        "org_access": {},
        "visibility": "secret",
        "created_at": clock.now_iso(),
        "gsi1pk": keys.teams_index(organization),
        "gsi1sk": name.lower(),
        "version": 1,
    }
    team.update(fields)
    return [team, {"pk": npk, "sk": nsk, "team_id": team_id}]


def owners_team_items(organization: str, users: list[str]) -> list[dict[str, Any]]:
    everything = dict.fromkeys(ORG_ACCESS_KEYS, True)
    return team_items(
        organization, owners_team_id(organization), OWNERS, users=users, owners=True, org_access=everything
    )


def project_items(organization: str, project_id: str, name: str, description: str = "") -> list[dict[str, Any]]:
    pk, sk = keys.project_key(project_id)
    npk, nsk = keys.project_name_key(organization, name)
    project = {
        "pk": pk,
        "sk": sk,
        "id": project_id,
        "organization": organization,
        "name": name,
        "description": description,
        "created_at": clock.now_iso(),
        "gsi1pk": keys.projects_index(organization),
        "gsi1sk": name.lower(),
        "version": 1,
    }
    return [project, {"pk": npk, "sk": nsk, "project_id": project_id}]


def creation_items(organization: str, creator_id: str, creator_email: str) -> list[dict[str, Any]]:
    """Written in the same transaction as the organization itself."""
    return [
        *owners_team_items(organization, [creator_id]),
        *membership_items(organization, creator_id, creator_email),
        *project_items(organization, default_project_id(organization), DEFAULT_PROJECT),
        stage_usage.marker(organization, stage_usage.KNOWN),  # its stage-usage markers are kept from now on
    ]


def ensure(table: Table, organization: str, owners: list[str], emails: dict[str, str]) -> None:
    """Give an organization created before teams existed its owners team, memberships and Default Project."""
    if table.get(*keys.team_key(owners_team_id(organization))) is None:
        _put_all(table, owners_team_items(organization, list(owners)))
    if table.get(*keys.project_key(default_project_id(organization))) is None:
        _put_all(table, project_items(organization, default_project_id(organization), DEFAULT_PROJECT))
    for user_id in owners:
        if table.get(*keys.membership_key(organization, user_id)) is None:
            _put_all(table, membership_items(organization, user_id, emails.get(user_id, "")))


def _put_all(table: Table, items: list[dict[str, Any]]) -> None:
    try:
        table.transact([Put(item, if_absent=True) for item in items])
    except ConditionFailed:
        pass  # someone else did it first


def owners_team(table: Table, organization: str) -> dict[str, Any]:
    team = table.get(*keys.team_key(owners_team_id(organization)))
    assert team is not None, "ensure() first"
    return team


def remove_all(table: Table, organization: str) -> None:
    """Delete an organization's teams, memberships, projects and grants (with the organization)."""
    doomed: list[tuple[str, str]] = []
    for team in table.query(keys.teams_index(organization), index="gsi1"):
        doomed += [keys.team_key(team["id"]), keys.team_name_key(organization, team["name"])]
        doomed += [keys.sso_team_key(team["sso_team_id"], team["id"])] if team.get("sso_team_id") else []
    for project in table.query(keys.projects_index(organization), index="gsi1"):
        doomed += [keys.project_key(project["id"]), keys.project_name_key(organization, project["name"])]
    for member in table.query(keys.membership_key(organization, "")[0]):
        doomed += [(member["pk"], member["sk"]), keys.membership_pointer_key(member["id"])]
    for index, key in ((keys.team_workspaces_index, "workspace_id"), (keys.team_projects_index, "project_id")):
        for grant in table.query(index(organization), index="gsi1"):
            doomed += [(grant["pk"], grant["sk"]), keys.grant_claim_key(grant[key], grant["team_id"])]
    table.batch_delete(doomed + stage_usage.keys(organization))
