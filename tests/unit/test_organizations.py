"""Organizations: CRUD rules and the short per-process read cache."""

from __future__ import annotations

from terrace.adapters.memory_table import MemoryTable
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services.access.authz import Authorizer
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.store_organizations import OrganizationStore

ALICE = Principal(PrincipalKind.USER, "user-alice", "alice")


def _pools(table: MemoryTable, cache_ttl_s: float = 2.0) -> OrganizationService:
    """An organization service whose default agent pool check lets any update through."""
    return OrganizationService(
        OrganizationStore(table),
        Authorizer(),
        check_default_agent_pool=lambda org, mode, pool: pool,
        cache_ttl_s=cache_ttl_s,
    )


def test_changes_show_at_once_here_and_within_the_ttl_elsewhere() -> None:
    table = MemoryTable()
    here = _pools(table)
    elsewhere = _pools(table, cache_ttl_s=3600)
    fresh = _pools(table, cache_ttl_s=0)
    here.create(ALICE, "acme", "a@example.com")
    assert elsewhere.lookup("acme").email == "a@example.com"
    here.update(ALICE, "acme", {"email": "b@example.com"})
    assert here.get(ALICE, "acme").email == "b@example.com"
    assert fresh.lookup("acme").email == "b@example.com"
    assert elsewhere.lookup("acme").email == "a@example.com"  # cached until its TTL passes
