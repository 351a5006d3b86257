"""VCS-driven runs (services/vcs/): OAuth clients and their tokens.

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters and its
other services (what this area takes from the others is declared below as plain attributes)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.encryptor import Encryptor
from terrace.adapters.table import Table

if TYPE_CHECKING:
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.access.projects import ProjectService
    from terrace.services.vcs.oauth_clients import OAuthClientService
    from terrace.services.vcs.store import VcsStore


class VcsServices:
    table: Table
    encryptor: Encryptor
    # from the other areas
    organizations: OrganizationService
    projects: ProjectService

    @cached_property
    def vcs_store(self) -> VcsStore:
        """The area's store (`services/vcs/store.py`): OAuth clients and tokens, their keys and items."""
        from terrace.services.vcs.store import VcsStore

        return VcsStore(self.table)

    @cached_property
    def oauth_clients(self) -> OAuthClientService:
        from terrace.services.vcs.oauth_clients import OAuthClientService

        return OAuthClientService(self.vcs_store, self.encryptor, self.organizations, self.projects)
