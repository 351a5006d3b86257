"""The access area's store: every table item of users, tokens, sign-ins, organizations, teams, memberships,
projects and team access, in six parts each a store of its own, which the area's services take in their
constructors (the only modules of `services/access/` that import the table port):

- `store_accounts.py` (`AccountStore`): users, their name and e-mail claims, API tokens and their lookups;
- `store_team_tokens.py` (`TeamTokenStore`): team tokens, the described ones with their descriptions' claims;
- `store_sign_in.py` (`SignInStore`): web sessions, `terraform login` codes, OpenID Connect sign-ins and links,
  single sign-on's teams, runner enrollments;
- `store_organizations.py` (`OrganizationStore`): organizations, their name claims, what each starts with;
- `store_teams.py` (`TeamStore`): teams and memberships;
- `store_projects.py` (`ProjectStore`): projects and teams' access to workspaces and projects;

with the key layouts the last three share in `store_keys.py`. `AccessStore` holds the six over one table, and
deletes what an organization holds of the area apart from the organization itself (`delete_all_of`)."""

from __future__ import annotations

from terrace.adapters.table import Table
from terrace.domain.tokens import audit_trail_subject
from terrace.services.access.store_accounts import RUNNER_TOKEN_SUBJECT, AccountStore
from terrace.services.access.store_organizations import OrganizationStore
from terrace.services.access.store_projects import ProjectStore
from terrace.services.access.store_sign_in import SignInStore
from terrace.services.access.store_team_tokens import TeamTokenStore
from terrace.services.access.store_teams import TeamStore


class AccessStore:
    def __init__(self, table: Table) -> None:
        self.accounts = AccountStore(table)
        self.team_tokens = TeamTokenStore(table)
        self.sign_in = SignInStore(table)
        self.organizations = OrganizationStore(table)
        self.teams = TeamStore(table)
        self.projects = ProjectStore(table)

    def delete_all_of(self, *, organization: str) -> None:
        """What an organization holds of this area beside its organization item, teams, memberships and projects
        (which go with it: `OrganizationStore.delete`): its runner, organization and team tokens, revoked (a team
        token outliving its organization would act in a new organization of the same name: the owners team's id
        is derived from the organization's key)."""
        for team in self.teams.teams_of(organization):
            self.accounts.revoke_of(team.id, organization)
        self.accounts.revoke_of(RUNNER_TOKEN_SUBJECT, organization)
        self.accounts.revoke_of(organization, organization)
        self.accounts.revoke_of(audit_trail_subject(organization), organization)
