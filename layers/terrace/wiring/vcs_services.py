"""VCS-driven runs (services/vcs/): OAuth clients and their tokens, workspaces' repository connections, webhook
deliveries, the runs they start and the commit statuses of those runs.

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters and its
other services (what this area takes from the others is declared below as plain attributes)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.encryptor import Encryptor
from terrace.adapters.events import EventPublisher
from terrace.adapters.forge import Forge
from terrace.adapters.github_app import GitHubApp
from terrace.adapters.outbound import Outbound
from terrace.adapters.repository_clone import RepositoryClone
from terrace.adapters.table import Table
from terrace.config import Settings

VCS_ARCHIVE_MAX = 100 * 1024 * 1024  # a forge's tarball of a commit, compressed (also under max_config_bytes)

if TYPE_CHECKING:
    from collections.abc import Callable

    from terrace.domain.workspace import Workspace
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.access.projects import ProjectService
    from terrace.services.events import EventService
    from terrace.services.runs.configuration_versions import ConfigurationVersionService
    from terrace.services.runs.runs import RunService
    from terrace.services.runs.store import RunStore
    from terrace.services.vcs.app_webhooks import AppWebhookIngress
    from terrace.services.vcs.commit_files import CommitFiles
    from terrace.services.vcs.connections import RepositoryConnections
    from terrace.services.vcs.github_app import GitHubAppInstallations
    from terrace.services.vcs.ingress import VcsIngress
    from terrace.services.vcs.oauth_clients import OAuthClientService
    from terrace.services.vcs.oauth_flow import OAuthFlow
    from terrace.services.vcs.statuses import CommitStatuses
    from terrace.services.vcs.store import VcsStore
    from terrace.services.vcs.webhooks import WebhookIngress
    from terrace.services.workflows.vcs_modules import ModuleSources
    from terrace.services.workflows.vcs_sources import PolicySetSources
    from terrace.services.workspaces.workspaces import WorkspaceService


class VcsServices:
    settings: Settings
    table: Table
    encryptor: Encryptor
    forge: Forge
    repository_clone: RepositoryClone | None
    github_app: GitHubApp | None
    outbound: Outbound  # an OAuth application's token endpoint
    publisher: EventPublisher
    # from the other areas
    organizations: OrganizationService
    projects: ProjectService
    workspaces: WorkspaceService
    configuration_versions: ConfigurationVersionService
    runs: RunService
    run_store: RunStore
    expect_runner: Callable[[Workspace, bool], None]  # wiring/run_services.py: a run's runner started ahead of it
    policy_set_sources: PolicySetSources  # wiring/workflow_services.py
    module_sources: ModuleSources  # wiring/workflow_services.py

    @cached_property
    def vcs_store(self) -> VcsStore:
        """The area's store (`services/vcs/store.py`): OAuth clients and tokens, their keys and items."""
        from terrace.services.vcs.store import VcsStore

        return VcsStore(self.table)

    @cached_property
    def oauth_clients(self) -> OAuthClientService:
        from terrace.services.vcs.oauth_clients import OAuthClientService
        from terrace.services.vcs.oauth_exchange import TokenEndpoint

        return OAuthClientService(self.vcs_store, self.encryptor, self.organizations, self.projects,
                                  TokenEndpoint(self.outbound), self.settings.public_url)  # fmt: skip

    @cached_property
    def vcs_oauth(self) -> OAuthFlow:
        """An OAuth application's browser flow: the forge's authorize URL, its callback's code for the token."""
        from terrace.services.vcs.oauth_exchange import TokenEndpoint
        from terrace.services.vcs.oauth_flow import OAuthFlow

        return OAuthFlow(self.vcs_store, self.oauth_clients, TokenEndpoint(self.outbound),
                         self.settings.url_signing_secret, self.settings.public_url)  # fmt: skip

    @cached_property
    def repository_connections(self) -> RepositoryConnections:
        """A workspace's `vcs-repo` and its webhook (the workspace service's `RepositoryLink`)."""
        from terrace.services.vcs.connections import RepositoryConnections

        return RepositoryConnections(self.vcs_store, self.encryptor, self.forge, self.organizations,
                                     self.oauth_clients, self.settings.public_url,
                                     self.github_app_installations, self.publisher.publish)  # fmt: skip

    @cached_property
    def github_app_installations(self) -> GitHubAppInstallations:
        """The deployment's GitHub App installations, each usable by the organizations the settings name."""
        from terrace.services.vcs.github_app import GitHubAppInstallations

        return GitHubAppInstallations(self.github_app, self.settings.github_app_installations, self.organizations)

    @cached_property
    def vcs_app_webhooks(self) -> AppWebhookIngress:
        """The GitHub App's deliveries: verified with its secret, routed to the workspaces they name."""
        from terrace.services.vcs.app_webhooks import AppWebhookIngress

        secret = self.settings.github_app_webhook_secret if self.github_app is not None else ""
        return AppWebhookIngress(self.vcs_store, secret, self.publisher.publish)

    @cached_property
    def vcs_webhooks(self) -> WebhookIngress:
        """Deliveries to the public webhook route: verified, deduplicated, queued as `vcs.delivery` events."""
        from terrace.services.vcs.webhooks import WebhookIngress

        return WebhookIngress(self.vcs_store, self.repository_connections, self.publisher.publish)

    @cached_property
    def vcs_ingress(self) -> VcsIngress:
        from terrace.services.vcs.ingress import VcsIngress

        return VcsIngress(self.repository_connections, self.forge, self.workspaces, self.organizations,
                          self.configuration_versions, self.runs, self.commit_files,
                          expect_runner=self.expect_runner)  # fmt: skip

    @cached_property
    def commit_files(self) -> CommitFiles:
        """A commit's files for every VCS source: the forge's tarball or a clone with submodules, read within the
        bounds of `services/vcs/archives.py`."""
        from terrace.services.vcs.archives import RepoBounds
        from terrace.services.vcs.commit_files import CommitFiles

        bounds = RepoBounds(archive_max=min(self.settings.max_config_bytes, VCS_ARCHIVE_MAX))
        return CommitFiles(self.forge, self.repository_clone, bounds)

    @cached_property
    def commit_statuses(self) -> CommitStatuses:
        from terrace.services.vcs.aggregated_statuses import AggregatedStatuses
        from terrace.services.vcs.comments import PlanComments
        from terrace.services.vcs.statuses import CommitStatuses

        return CommitStatuses(self.repository_connections, self.forge, self.workspaces, self.configuration_versions,
                              self.run_store.load, self.settings.public_url,
                              PlanComments(self.vcs_store, self.forge),
                              AggregatedStatuses(self.vcs_store, self.settings.public_url))  # fmt: skip

    def subscribe_vcs(self, events: EventService) -> None:
        from terrace.services.vcs.connections import CONNECTED
        from terrace.services.vcs.webhooks import DELIVERY

        events.subscribe(DELIVERY, lambda event: self.vcs_ingress.on_event(event))
        events.subscribe(DELIVERY, lambda event: self.policy_set_sources.on_event(event))
        events.subscribe(CONNECTED, lambda event: self.policy_set_sources.on_event(event))
        events.subscribe(DELIVERY, lambda event: self.module_sources.on_event(event))
        events.subscribe(CONNECTED, lambda event: self.module_sources.on_event(event))
        events.subscribe("run.status_changed", lambda event: self.commit_statuses.on_run_status(event))
