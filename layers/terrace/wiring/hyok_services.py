"""Hold Your Own Key (services/hyok/): OIDC configurations, HYOK configurations, their key test (subscribed to the
events queue by `subscribe_hyok`, called where the container's `EventService` is built) and customer key versions.

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters (`key_wrapper`:
AWS KMS, the embedded server's key file, memory) and what this area takes from the others, declared below."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.events import EventPublisher
from terrace.adapters.key_wrapper import KeyWrapper
from terrace.adapters.table import Table

if TYPE_CHECKING:
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.access.workload_issuer import WorkloadIssuer
    from terrace.services.events import EventService
    from terrace.services.hyok.configurations import HyokConfigurationService
    from terrace.services.hyok.key_test import KeyTester
    from terrace.services.hyok.key_versions import KeyVersionService
    from terrace.services.hyok.oidc_configurations import OidcConfigurationService
    from terrace.services.hyok.state_keys import HyokStateKeys
    from terrace.services.hyok.store import HyokStore
    from terrace.services.outbox_relay import OutboxRelay
    from terrace.services.workspaces.agent_pools import AgentPoolService


class HyokServices:
    table: Table
    publisher: EventPublisher
    key_wrapper: KeyWrapper
    # from the other areas
    organizations: OrganizationService
    agent_pools: AgentPoolService
    workload_issuer: WorkloadIssuer
    outbox_relay: OutboxRelay  # wiring/run_services.py: a configuration's test request rides in its write

    @cached_property
    def hyok_store(self) -> HyokStore:
        from terrace.services.hyok.store import HyokStore

        return HyokStore(self.table)

    @cached_property
    def oidc_configurations(self) -> OidcConfigurationService:
        from terrace.services.hyok.oidc_configurations import OidcConfigurationService

        return OidcConfigurationService(self.hyok_store, self.organizations)

    @cached_property
    def hyok_key_tester(self) -> KeyTester:
        from terrace.services.hyok.key_test import KeyTester

        return KeyTester(self.hyok_store, self.organizations, self.key_wrapper, self.workload_issuer)

    @cached_property
    def hyok_configurations(self) -> HyokConfigurationService:
        from terrace.services.hyok.configurations import HyokConfigurationService

        return HyokConfigurationService(
            self.hyok_store,
            self.organizations,
            self.oidc_configurations,
            self.agent_pools,
            relay=self.outbox_relay,
            run_test=lambda hyok_id: self.hyok_key_tester.run(hyok_id),
        )

    @cached_property
    def hyok_key_versions(self) -> KeyVersionService:
        from terrace.services.hyok.key_versions import KeyVersionService

        return KeyVersionService(
            self.hyok_store, self.organizations, self.hyok_configurations, self.hyok_key_tester, self.key_wrapper
        )

    @cached_property
    def hyok_state_keys(self) -> HyokStateKeys:
        """The data keys of HYOK state versions: the state area's `HyokKeys` port."""
        from terrace.services.hyok.state_keys import HyokStateKeys

        return HyokStateKeys(self.hyok_store)

    def subscribe_hyok(self, events: EventService) -> None:
        from terrace.services.hyok.key_test import EVENT

        events.subscribe(EVENT, lambda event: self.hyok_key_tester.on_event(event))
