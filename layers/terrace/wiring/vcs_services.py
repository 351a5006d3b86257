"""VCS-driven runs (services/vcs/): OAuth clients and their tokens, workspaces' repository connections.

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters and its
other services (what this area takes from the others is declared below as plain attributes)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.encryptor import Encryptor
from terrace.adapters.forge import Forge
from terrace.adapters.table import Table
from terrace.config import Settings

if TYPE_CHECKING:
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.access.projects import ProjectService
    from terrace.services.vcs.connections import RepositoryConnections
    from terrace.services.vcs.oauth_clients import OAuthClientService
    from terrace.services.vcs.store import VcsStore


class VcsServices:
    settings: Settings
    table: Table
    encryptor: Encryptor
    forge: Forge
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

    @cached_property
    def repository_connections(self) -> RepositoryConnections:
        """A workspace's `vcs-repo` and its webhook (the workspace service's `RepositoryLink`)."""
        from terrace.services.vcs.connections import RepositoryConnections

        return RepositoryConnections(
            self.vcs_store, self.encryptor, self.forge, self.organizations, self.oauth_clients, self.settings.public_url
        )
