"""Site administration (services/admin/): the site admin API and its users, the admin settings and the site's
mail, SCIM provisioning, and the tool versions with their catalog's sync from the release mirrors.

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters and its
other services (what this area takes from the others is declared below as plain attributes)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.encryptor import Encryptor
from terrace.adapters.mail import Mail
from terrace.adapters.table import Table
from terrace.config import Settings

if TYPE_CHECKING:
    from terrace.services.access.accounts import AccountService
    from terrace.services.access.authz import Authorizer
    from terrace.services.access.memberships import MembershipService
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.access.teams import TeamService
    from terrace.services.access.users import UserService
    from terrace.services.access.workload_issuer import WorkloadIssuer
    from terrace.services.admin.scim_admin import ScimAdmin
    from terrace.services.admin.scim_groups import ScimGroups
    from terrace.services.admin.scim_users import ScimUsers
    from terrace.services.admin.settings import AdminSettings
    from terrace.services.admin.site import SiteAdminService
    from terrace.services.admin.store_scim import ScimStore
    from terrace.services.admin.tool_sync import ToolCatalogSync
    from terrace.services.admin.tool_version_admin import ToolVersionAdmin
    from terrace.services.admin.tool_versions import ToolVersionService
    from terrace.services.admin.users import SiteAdminUsers
    from terrace.services.runs.scheduler import RunScheduler
    from terrace.services.runs.store import RunStore
    from terrace.services.workspaces.workspaces import WorkspaceService


class AdminServices:
    settings: Settings
    table: Table
    encryptor: Encryptor
    mail: Mail
    # from the other areas
    authz: Authorizer  # wiring/access_services.py
    accounts: AccountService
    users: UserService
    organizations: OrganizationService
    teams: TeamService
    memberships: MembershipService
    workload_issuer: WorkloadIssuer
    workspaces: WorkspaceService  # wiring/workspace_services.py
    run_store: RunStore  # wiring/run_services.py
    scheduler: RunScheduler

    @cached_property
    def site_admin(self) -> SiteAdminService:
        from terrace.services.admin.site import SiteAdminService

        return SiteAdminService(self.authz, self.organizations, self.workspaces, self.run_store, self.scheduler)

    @cached_property
    def admin_users(self) -> SiteAdminUsers:
        from terrace.services.admin.users import SiteAdminUsers

        return SiteAdminUsers(self.authz, self.accounts, self.users, self.organizations, self.memberships)

    @cached_property
    def admin_settings(self) -> AdminSettings:
        """TFE's admin settings (SMTP, general, SAML, SCIM, ...), read by the behaviour they govern."""
        from terrace.adapters.site_mail import SiteMail
        from terrace.services.admin.settings import AdminSettings
        from terrace.services.admin.store_settings import AdminSettingsStore

        store = AdminSettingsStore(self.table)
        return AdminSettings(self.authz, store, self.encryptor, self.workload_issuer, self.scim_store, SiteMail.test)

    @cached_property
    def site_mail(self) -> Mail:
        """Every e-mail: through the site admin's SMTP server when enabled, else the deployment's mail adapter."""
        from terrace.adapters.site_mail import SiteMail

        return SiteMail(self.mail, self.admin_settings.smtp_server)

    @cached_property
    def scim_store(self) -> ScimStore:
        from terrace.services.admin.store_scim import ScimStore

        return ScimStore(self.table)

    @cached_property
    def scim_users(self) -> ScimUsers:
        from terrace.services.admin.scim_users import ScimUsers

        return ScimUsers(self.scim_store, self.admin_settings, self.accounts, self.users, self.memberships,
                         self.settings.public_url, lambda scim_id: self.scim_groups.resync_user(scim_id))  # fmt: skip

    @cached_property
    def scim_groups(self) -> ScimGroups:
        from terrace.services.admin.scim_groups import ScimGroups

        return ScimGroups(self.scim_store, self.admin_settings, lambda: self.scim_users, self.teams, self.memberships,
                          self.accounts, self.users, self.settings.public_url)  # fmt: skip

    @cached_property
    def scim_admin(self) -> ScimAdmin:
        from terrace.services.admin.scim_admin import ScimAdmin

        return ScimAdmin(self.authz, self.admin_settings, self.scim_store, self.scim_groups, self.accounts, self.teams)

    @cached_property
    def tool_version_admin(self) -> ToolVersionAdmin:
        from terrace.services.admin.tool_version_admin import ToolVersionAdmin

        return ToolVersionAdmin(self.authz, self.tool_versions, self.site_admin)

    @cached_property
    def tool_catalog_sync(self) -> ToolCatalogSync:
        from terrace.adapters.httpx_release_index import read_index
        from terrace.services.admin.tool_releases import INDEX_MAX
        from terrace.services.admin.tool_sync import ToolCatalogSync

        mirrors = {"terraform": self.settings.tool_mirror_terraform, "opentofu": self.settings.tool_mirror_opentofu}
        return ToolCatalogSync(
            self.tool_versions, mirrors, lambda url: read_index(url, INDEX_MAX), signed_by_vendor(self.settings)
        )

    @cached_property
    def tool_versions(self) -> ToolVersionService:
        from terrace.services.admin.store import ToolVersionStore
        from terrace.services.admin.tool_versions import ToolVersionService

        store = ToolVersionStore(self.table)
        settings = self.settings
        mirrors = {"terraform": settings.tool_mirror_terraform, "opentofu": settings.tool_mirror_opentofu}
        from terrace.adapters.rego_policy_engine import release as opa_engine

        return ToolVersionService(
            store,
            settings.tool_versions(),
            settings.default_tool,
            downloads=settings.tool_downloads,
            mirrors=mirrors,
            builds={"opa": opa_engine},  # the engine policies are evaluated with (on AWS: the policy function's)
        )


def signed_by_vendor(settings: Settings) -> Callable[[str, bytes, bytes], None]:
    """The catalog sync's check of a release's SHA256SUMS: the runner's (`runner/release_check.py`), with the keys
    the runners trust (TERRACE_TOOL_TRUSTED_KEYS, else each vendor's own)."""
    from terrace.runner import release_check

    def check(tool: str, sums: bytes, signature: bytes) -> None:
        keys = release_check.load_keys(settings.tool_trusted_keys) if settings.tool_trusted_keys else None
        release_check.verify_signature(sums, signature, keys if keys is not None else release_check.shipped_keys(tool))

    return check
