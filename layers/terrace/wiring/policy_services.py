"""Policy as code (services/policies/): policies, policy sets, their parameters and versions, the runs' OPA
policy evaluations (a task stage participant) and the policy checks older clients read.

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters and its
other services (what this area takes from the others is declared below as plain attributes)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.encryptor import Encryptor
from terrace.adapters.events import EventPublisher, EventQueue

if TYPE_CHECKING:
    from terrace.adapters.hcl_reader import HclReader
    from terrace.adapters.policy_engine import PolicyEngine
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.access.projects import ProjectService
    from terrace.services.events import EventService
    from terrace.services.outbox_relay import OutboxRelay
    from terrace.services.policies.evaluation_worker import EvaluationWorker
    from terrace.services.policies.evaluations import PolicyEvaluationService
    from terrace.services.policies.pages import PolicyPages
    from terrace.services.policies.parameters import PolicySetParameterService
    from terrace.services.policies.participant import PolicyStageParticipant
    from terrace.services.policies.policies import PolicyService
    from terrace.services.policies.policy_checks import PolicyCheckService
    from terrace.services.policies.policy_creation import PolicyCreation
    from terrace.services.policies.policy_sets import PolicySetService
    from terrace.services.policies.store import PolicyStore
    from terrace.services.policies.store_evaluations import EvaluationStore
    from terrace.services.policies.versions import PolicySetVersionService
    from terrace.services.runs.run_queries import RunQueries
    from terrace.services.vcs.connections import RepositoryConnections
    from terrace.services.workspaces.workspaces import WorkspaceService


if TYPE_CHECKING:
    pass

from terrace.adapters.table import Table
from terrace.config import Settings


class PolicyServices:
    settings: Settings
    table: Table
    blobs: BlobStore
    encryptor: Encryptor
    publisher: EventPublisher
    event_queue: EventQueue | None  # the consumer side of `publisher`, which can delay (None: unit tests)
    # from the other areas
    organizations: OrganizationService
    projects: ProjectService
    workspaces: WorkspaceService
    run_queries: RunQueries
    outbox_relay: OutboxRelay  # wiring/run_services.py: the policy evaluation's `queued` rides in its write
    remote_policy_engine: PolicyEngine | None  # a field of the container: the policy function on AWS
    hcl_reader: HclReader  # wiring/registry_services.py: policies.hcl is read as uploaded modules are
    repository_connections: RepositoryConnections  # wiring/vcs_services.py: a policy set's `vcs-repo`

    @cached_property
    def policy_engine(self) -> PolicyEngine:
        """The policy function when the composition root gave one (AWS), else the engine's bounded child process."""
        if self.remote_policy_engine is not None:
            return self.remote_policy_engine
        from terrace.adapters.rego_policy_engine import RegoPolicyEngine

        timeout = self.settings.policy_timeout_s
        return RegoPolicyEngine(
            timeout_s=timeout, cpu_s=max(1, int(timeout)), memory_bytes=self.settings.policy_memory_mb * 1024 * 1024
        )

    @cached_property
    def policy_store(self) -> PolicyStore:
        """Policies, policy sets, their parameters and versions: their keys and items."""
        from terrace.services.policies.store import PolicyStore

        return PolicyStore(self.table, self.blobs)

    @cached_property
    def policy_evaluation_store(self) -> EvaluationStore:
        """The runs' policy evaluations, their outcomes and the organizations' evaluation slots."""
        from terrace.services.policies.store_evaluations import EvaluationStore

        return EvaluationStore(self.table)

    @cached_property
    def policies(self) -> PolicyService:
        from terrace.services.policies.policies import PolicyService

        return PolicyService(
            self.policy_store,
            self.organizations,
            self.policy_engine,
            on_delete=lambda org, policy_id: self.policy_sets.forget_policy(org, policy_id),
        )

    @cached_property
    def policy_sets(self) -> PolicySetService:
        from terrace.services.policies.policy_sets import PolicySetService

        return PolicySetService(self.policy_store, self.organizations, self.workspaces, self.projects, self.policies,
                                self.repository_connections)  # fmt: skip

    @cached_property
    def policy_creation(self) -> PolicyCreation:
        from terrace.services.policies.policy_creation import PolicyCreation

        return PolicyCreation(self.organizations, self.policies, self.policy_sets)

    @cached_property
    def policy_set_parameters(self) -> PolicySetParameterService:
        from terrace.services.policies.parameters import PolicySetParameterService

        return PolicySetParameterService(self.policy_store, self.encryptor, self.policy_sets)

    @cached_property
    def policy_pages(self) -> PolicyPages:
        """The UI's policy set and policy pages, each read in one call."""
        from terrace.services.policies.pages import PolicyPages

        return PolicyPages(self.policies, self.policy_sets, self.policy_set_parameters, self.policy_set_versions)

    @cached_property
    def policy_set_versions(self) -> PolicySetVersionService:
        from terrace.services.policies.versions import PolicySetVersionService

        return PolicySetVersionService(
            self.policy_store,
            self.blobs,
            self.settings,
            self.policy_sets,
            self.policies,
            self.policy_engine,
            self.hcl_reader,
        )

    @cached_property
    def policy_evaluation_worker(self) -> EvaluationWorker:
        from terrace.services.policies.evaluation_worker import EvaluationWorker

        return EvaluationWorker(
            self.policy_evaluation_store,
            self.blobs,
            self.publisher,
            self.policy_sets,
            self.policy_set_versions,
            self.policy_set_parameters,
            self.policy_engine,
            engine_timeout_s=self.settings.policy_timeout_s,
            per_organization=self.settings.policy_concurrency_per_organization,
            publish_later=self._publish_policy_later,
        )

    def _publish_policy_later(self, event: dict[str, Any], delay_s: int) -> None:
        """A deferred policy set's event, on the events queue after `delay_s` (SQS, SQLite, the moto queue); unit
        tests' recording publisher takes it at once."""
        if self.event_queue is not None:
            self.event_queue.publish(event, delay_s)
        else:
            self.publisher.publish(event)

    @cached_property
    def policy_evaluations(self) -> PolicyEvaluationService:
        from terrace.services.policies.evaluations import PolicyEvaluationService

        return PolicyEvaluationService(
            self.policy_evaluation_store,
            self.outbox_relay,
            self.organizations,
            self.workspaces,
            self.projects,
            self.policy_sets,
            self.policy_evaluation_worker,
        )

    @cached_property
    def policy_checks(self) -> PolicyCheckService:
        from terrace.services.policies.policy_checks import PolicyCheckService

        return PolicyCheckService(self.policy_evaluations, self.run_queries, self.workspaces)

    @cached_property
    def policy_participant(self) -> PolicyStageParticipant:
        """Registered with the run's task stages."""
        from terrace.services.policies.participant import PolicyStageParticipant

        return PolicyStageParticipant(self.policy_evaluations)

    def subscribe_policies(self, events: EventService) -> None:
        """The events worker evaluates queued policy evaluations, one policy set per event (tarball landings are
        routed by `landed`)."""
        from terrace.services.policies.evaluation_worker import QUEUED, SET_QUEUED

        events.subscribe(QUEUED, self.policy_evaluation_worker.queued)
        events.subscribe(SET_QUEUED, self.policy_evaluation_worker.run_set)
