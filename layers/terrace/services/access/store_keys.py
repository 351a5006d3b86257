"""Table keys of organizations, memberships, teams, projects and team access (the access store's layouts, shared
by its parts `store_organizations.py`, `store_teams.py`, `store_projects.py`)."""

from __future__ import annotations

ORGS_INDEX = "orgs"  # gsi1 of every organization, by name


def org_key(key: str) -> tuple[str, str]:
    """The organization stored under `key` (the name it was created with)."""
    return f"org#{key}", "org"


def org_name_claim(name: str) -> tuple[str, str]:
    """Names are unique whatever their case (HCP Terraform's): the claim is on the lower-cased name."""
    return f"orgname#{name.lower()}", "orgname"


def org_exact_claim(name: str) -> tuple[str, str]:
    """The claim as stored before names were unique whatever their case (still read, deleted with its name)."""
    return f"orgname#{name}", "orgname"


def membership_key(organization: str, user_id: str) -> tuple[str, str]:
    """A user's membership in an organization: all of an organization's are one query."""
    return f"org#{organization}#members", user_id


def membership_pointer_key(membership_id: str) -> tuple[str, str]:
    return membership_id, "om"


def team_key(team_id: str) -> tuple[str, str]:
    return team_id, "team"


def teams_index(organization: str) -> str:
    return f"org#{organization}#teams"


def team_name_key(organization: str, name: str) -> tuple[str, str]:
    return f"org#{organization}#teamnames", name.lower()


def project_key(project_id: str) -> tuple[str, str]:
    return project_id, "prj"


def projects_index(organization: str) -> str:
    return f"org#{organization}#projects"


def project_name_key(organization: str, name: str) -> tuple[str, str]:
    return f"org#{organization}#projectnames", name.lower()


def team_workspace_key(access_id: str) -> tuple[str, str]:
    return access_id, "tws"


def team_workspaces_index(organization: str) -> str:
    """gsi1 of every team-workspace grant of an organization, sorted by `<workspace>#<team>`."""
    return f"org#{organization}#team-workspaces"


def team_project_key(access_id: str) -> tuple[str, str]:
    return access_id, "tprj"


def team_projects_index(organization: str) -> str:
    return f"org#{organization}#team-projects"


def grant_claim_key(target_id: str, team_id: str) -> tuple[str, str]:
    """One grant per team and workspace (or project)."""
    return f"{target_id}#team-grants", team_id


def sso_team_key(sso_team_id: str, team_id: str) -> tuple[str, str]:
    """Teams by their sso-team-id (an identity provider group), across organizations."""
    return f"ssoteam#{sso_team_id}", team_id


def invitations_key(user_id: str) -> tuple[str, str]:
    """How many invitations a user sent today."""
    return f"invitations#{user_id}", "day"
