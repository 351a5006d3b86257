"""Access (services/access/): permissions, accounts and tokens, sign-in, organizations, teams, memberships,
projects, team access (the site administration is `admin_services.py`).

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters and its
other services (what this area takes from the others is declared below as plain attributes)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.mail import Mail
from terrace.adapters.signing_keys import SigningKeyStore
from terrace.adapters.table import Table
from terrace.config import Settings

if TYPE_CHECKING:
    from terrace.services.access.accounts import AccountService
    from terrace.services.access.authz import Authorizer
    from terrace.services.access.documents import AccessDocuments
    from terrace.services.access.memberships import MembershipService
    from terrace.services.access.oidc import OidcSignIn
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.access.projects import ProjectService
    from terrace.services.access.service_tokens import ServiceTokenService
    from terrace.services.access.sso_teams import SsoTeamSync
    from terrace.services.access.store import AccessStore
    from terrace.services.access.team_access import TeamAccessService
    from terrace.services.access.team_members import TeamMembers
    from terrace.services.access.team_tokens import TeamTokenService
    from terrace.services.access.teams import TeamService
    from terrace.services.access.terraform_login import TerraformLoginService
    from terrace.services.access.token_ttl_policies import TokenTTLPolicyService
    from terrace.services.access.users import UserService
    from terrace.services.access.web_sessions import WebSessionService
    from terrace.services.access.workload_issuer import WorkloadIssuer
    from terrace.services.admin.settings import AdminSettings
    from terrace.services.hyok.state_keys import HyokStateKeys
    from terrace.services.notifications.configurations import NotificationConfigurations
    from terrace.services.workspaces.agent_pool_bindings import AgentPoolBindings
    from terrace.services.workspaces.agent_pools import AgentPoolService
    from terrace.services.workspaces.workspaces import WorkspaceService


class AccessServices:
    settings: Settings
    table: Table
    signing_keys: SigningKeyStore
    # from the other areas
    workspaces: WorkspaceService
    agent_pools: AgentPoolService
    agent_pool_bindings: AgentPoolBindings
    notification_configurations: NotificationConfigurations
    admin_settings: AdminSettings  # wiring/admin_services.py
    hyok_state_keys: HyokStateKeys  # wiring/hyok_services.py
    site_mail: Mail

    @cached_property
    def workload_issuer(self) -> WorkloadIssuer:
        """The OIDC issuer of workload identity tokens (dynamic provider credentials)."""
        from terrace.services.access.workload_issuer import WorkloadIssuer

        return WorkloadIssuer(self.signing_keys, self.settings.public_url, token_ttl_s=self.settings.phase_deadline_s)

    @cached_property
    def access_store(self) -> AccessStore:
        """The access area's items (users, tokens, sign-ins, organizations, teams, memberships, projects, grants)."""
        from terrace.services.access.store import AccessStore

        return AccessStore(self.table)

    @cached_property
    def authz(self) -> Authorizer:
        from terrace.services.access.authz import Authorizer
        from terrace.services.access.grants import TableAccessResolver

        return Authorizer(
            TableAccessResolver(self.access_store.teams, self.access_store.projects),
            project_of_workspace=lambda ws_id: self.workspaces.project_of_id(ws_id),
        )

    @cached_property
    def accounts(self) -> AccountService:
        from terrace.services.access.accounts import AccountService

        return AccountService(self.access_store.accounts)

    @cached_property
    def users(self) -> UserService:
        from terrace.services.access.users import UserService

        return UserService(self.access_store.accounts, self.access_store.sign_in, self.accounts,
                           scim_enabled=lambda: bool(self.admin_settings.scim_state()["enabled"]))  # fmt: skip

    @cached_property
    def web_sessions(self) -> WebSessionService:
        from terrace.services.access.web_sessions import WebSessionService

        return WebSessionService(self.access_store.sign_in, self.accounts, self.settings.url_signing_secret)

    @cached_property
    def oidc(self) -> OidcSignIn | None:
        """UI sign-in through the operator's OpenID Connect issuer, when one is configured."""
        from terrace.services.access.oidc import CALLBACK_PATH, OidcConfig, OidcSignIn

        s = self.settings
        if not s.oidc_issuer:
            return None
        config = OidcConfig(
            s.oidc_issuer, s.oidc_client_id, s.oidc_client_secret, s.public_url + CALLBACK_PATH, s.oidc_groups_claim
        )
        return OidcSignIn(
            self.access_store.sign_in, self.accounts, self.web_sessions, config, on_groups=self.sso_teams.sync
        )

    @cached_property
    def terraform_login(self) -> TerraformLoginService:
        from terrace.services.access.terraform_login import TerraformLoginService

        return TerraformLoginService(self.access_store.sign_in, self.accounts)

    @cached_property
    def organizations(self) -> OrganizationService:
        from terrace.services.access.organizations import OrganizationService

        return OrganizationService(
            self.access_store.organizations,
            self.authz,
            check_default_agent_pool=lambda org, mode, pool: self.agent_pool_bindings.check_default(org, mode, pool),
            creation_limited=lambda: self.admin_settings.limits_organization_creation(),
            cost_estimation_available=lambda: bool(self.admin_settings.current("cost-estimation")["enabled"]),
            hyok_available=lambda org_key: self.hyok_state_keys.has_available(org_key),  # wiring/hyok_services.py
        )

    # teams and access -------------------------------------------------------------------
    @cached_property
    def teams(self) -> TeamService:
        from terrace.services.access.teams import TeamService

        return TeamService(
            self.access_store.teams,
            self.authz,
            self.organizations,
            after_delete=[
                lambda team: self.notification_configurations.delete_all(team.id),
                lambda team: self.team_tokens.revoke_all(team.id),  # its tokens die too
            ],
        )

    @cached_property
    def access_documents(self) -> AccessDocuments:
        from terrace.services.access.documents import AccessDocuments

        return AccessDocuments(self.authz, self.teams, self.memberships, self.accounts)

    @cached_property
    def team_members(self) -> TeamMembers:
        from terrace.services.access.team_members import TeamMembers

        return TeamMembers(self.teams, self.memberships)

    @cached_property
    def memberships(self) -> MembershipService:
        from terrace.services.access.memberships import MembershipService

        return MembershipService(self.access_store.teams, self.organizations, self.accounts, self.teams,
                                 mail=self.site_mail, public_url=self.settings.public_url)  # fmt: skip

    @cached_property
    def projects(self) -> ProjectService:
        from terrace.services.access.projects import ProjectService

        return ProjectService(
            self.access_store.projects,
            self.teams,
            pool_exists=lambda org_key, pool_id: self.agent_pools.load(pool_id, org_key) is not None,
        )

    @cached_property
    def team_access(self) -> TeamAccessService:
        from terrace.services.access.team_access import TeamAccessService

        return TeamAccessService(self.access_store.projects, self.teams, self.workspaces, self.projects)

    @cached_property
    def sso_teams(self) -> SsoTeamSync:
        from terrace.services.access.sso_teams import SsoTeamSync

        return SsoTeamSync(self.access_store.sign_in, self.accounts, self.teams, self.memberships)

    @cached_property
    def service_tokens(self) -> ServiceTokenService:
        from terrace.services.access.service_tokens import ServiceTokenService

        return ServiceTokenService(self.accounts, self.organizations)

    @cached_property
    def token_ttl_policies(self) -> TokenTTLPolicyService:
        from terrace.services.access.token_ttl_policies import TokenTTLPolicyService

        return TokenTTLPolicyService(self.organizations)

    @cached_property
    def team_tokens(self) -> TeamTokenService:
        from terrace.services.access.team_tokens import TeamTokenService

        return TeamTokenService(
            self.access_store.team_tokens, self.accounts, self.teams, self.organizations, self.authz
        )
