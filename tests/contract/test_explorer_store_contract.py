"""The explorer's summaries on each table (memory, SQLite, DynamoDB on moto): a workspace's state part and
configuration part never erase each other, an organization's summaries read in one query, and `delete_all_of`
removes one workspace's or a whole organization's, nothing of another organization's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.domain.explorer import Summary, Use
from terrace.services.workflows.store_explorer import ExplorerStore

VPC = Use("vpc", "terraform-aws-modules/vpc/aws", "5.1.2")
AWS = Use("aws", "hashicorp/aws", "5.31.0", "~> 5.0")  # locked at 5.31.0, its constraint kept


@pytest.fixture(params=IMPLEMENTATIONS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ExplorerStore]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        yield ExplorerStore(table)


def test_parts_are_kept_apart_and_read_per_organization(store: ExplorerStore) -> None:
    assert store.summaries("org-a") == {} and store.summary("org-a", "ws-1") is None
    store.record_configuration("org-a", "ws-1", "cv-1", (VPC,), (AWS,))
    store.record_state("org-a", "ws-1", "sv-1", "1.9.5", ["hashicorp/random", "hashicorp/aws", "hashicorp/aws"])
    store.record_state("org-a", "ws-2", "sv-2", "1.3.2", [])
    store.record_state("org-b", "ws-3", "sv-3", "1.5.0", [])
    expected = Summary("sv-1", "1.9.5", ("hashicorp/aws", "hashicorp/random"), "cv-1", (VPC,), (AWS,))
    assert store.summary("org-a", "ws-1") == expected
    store.record_configuration("org-a", "ws-1", "cv-2", (), ())  # a later configuration replaces its part only
    assert store.summary("org-a", "ws-1") == Summary("sv-1", "1.9.5", ("hashicorp/aws", "hashicorp/random"), "cv-2")
    assert sorted(store.summaries("org-a")) == ["ws-1", "ws-2"]


def test_delete_all_of_a_workspace_or_an_organization(store: ExplorerStore) -> None:
    for org, ws in (("org-a", "ws-1"), ("org-a", "ws-2"), ("org-b", "ws-3")):
        store.record_state(org, ws, f"sv-{ws}", "1.9.5", [])
    store.delete_all_of(organization="org-a", workspace="ws-1")
    assert sorted(store.summaries("org-a")) == ["ws-2"]
    store.delete_all_of(organization="org-a")
    assert store.summaries("org-a") == {} and sorted(store.summaries("org-b")) == ["ws-3"]
