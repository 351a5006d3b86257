"""Policy as code stored on each table (memory, SQLite, DynamoDB on moto), through its stores: names claimed once per
organization and freed by a deletion, changes only from the version read, records that never carry a key while the
item keeps its keys, the runs' evaluations with their outcomes and run pointers, the organizations' slots, and
`delete_all_of` taking an organization's policies, sets, parameters, versions and blobs, or a run's evaluations, and
nothing of another's. Then the services on each table, as the API calls them (`test_policies_sets_parameters_...`)."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.adapters.table import ConditionFailed, Put, Table
from terrace.bootstrap import Container
from terrace.config import Settings
from terrace.domain import stage_usage
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.policy_evaluations import PolicySetOutcome
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services import shared_keys
from terrace.services.policies.store import PolicyStore
from terrace.services.policies.store_evaluations import EvaluationStore

REGO = 'package terraform.policies.p\nimport rego.v1\ndeny contains "no" if { input.plan.bad }\n'
HCL = 'policy "p" {\n  query = "data.terraform.policies.p.deny"\n  enforcement_level = "mandatory"\n}\n'
KEYS = {"pk", "sk", "gsi1pk", "gsi1sk"}
T0, T1 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"


@pytest.fixture(params=IMPLEMENTATIONS)
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Table]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as made:
        yield made


@pytest.fixture
def stores(table: Table) -> SimpleNamespace:
    blobs = MemoryBlobs()
    return SimpleNamespace(table=table, blobs=blobs, policies=PolicyStore(table, blobs), runs=EvaluationStore(table))


def _policy(policy_id: str, name: str, org: str = "acme") -> dict[str, Any]:
    return {"id": policy_id, "organization": org, "organization_id": f"org-{org}", "name": name, "kind": "opa",
            "content": None, "created_at": T0, "updated_at": T0, "version": 1}  # fmt: skip


def _set(set_id: str, name: str, created_at: str = T0, org: str = "acme") -> dict[str, Any]:
    return {"id": set_id, "organization": org, "organization_id": f"org-{org}", "name": name, "kind": "opa",
            "created_at": created_at, "updated_at": created_at, "version": 1}  # fmt: skip


def _version(version_id: str, set_id: str, created_at: str = T0) -> dict[str, Any]:
    return {"id": version_id, "policy_set_id": set_id, "organization": "acme", "status": "pending",
            "created_at": created_at, "updated_at": created_at, "version": 1,
            "blob_key": f"policy-uploads/{set_id}/{version_id}.tar.gz"}  # fmt: skip


def test_policies_claim_their_name_change_from_the_version_read_and_free_it(stores: SimpleNamespace) -> None:
    store: PolicyStore = stores.policies
    store.create_policy(_policy("pol-b", "beta"))
    store.create_policy(_policy("pol-a", "alpha"))
    store.create_policy(_policy("pol-o", "alpha", org="other"))  # another organization's names are its own
    with pytest.raises(Invalid, match="name Alpha has already been taken"):
        store.create_policy(_policy("pol-c", "Alpha"))  # claimed case-insensitively, nothing written
    assert store.policy("pol-c") is None
    assert [p["id"] for p in store.policies_of("acme")] == ["pol-a", "pol-b"]  # by name
    read = store.policy("pol-a")
    assert read is not None and not KEYS & set(read) and read["name"] == "alpha"
    raw = stores.table.get("pol-a", "policy")
    store.replace_policy({**read, "content": "x", "version": 2}, 1)
    assert stores.table.get("pol-a", "policy") == {**raw, "content": "x", "version": 2}  # the same item, keys kept
    with pytest.raises(Conflict):
        store.replace_policy({**read, "version": 2}, 1)  # from a version no longer current
    store.delete_policy(store.policy("pol-a") or {})
    assert store.policy("pol-a") is None
    store.create_policy(_policy("pol-d", "alpha"))  # its name was freed


def test_policy_sets_mark_the_organization_claim_renames_and_change_conditionally(stores: SimpleNamespace) -> None:
    store: PolicyStore = stores.policies
    store.create_policy_set(_set("polset-2", "second", T1))
    store.create_policy_set(_set("polset-1", "first", T0))
    assert stores.table.get(shared_keys.stage_usage_partition("acme"), stage_usage.POLICY_SETS) is not None
    with pytest.raises(Invalid):
        store.create_policy_set(_set("polset-3", "FIRST"))
    assert [s["id"] for s in store.policy_sets_of("acme")] == ["polset-1", "polset-2"]  # oldest first
    with pytest.raises(Invalid):
        store.rename_policy_set("acme", "polset-1", "first", "second")  # taken: the old name stays claimed
    store.rename_policy_set("acme", "polset-1", "first", "renamed")
    store.create_policy_set(_set("polset-4", "first", "2026-01-03T00:00:00Z"))  # the old name was given up
    read = store.policy_set("polset-1")
    assert read is not None and not KEYS & set(read)
    store.replace_policy_set({**read, "name": "renamed", "policy_ids": ["pol-a"], "version": 2}, 1)
    with pytest.raises(ConditionFailed):
        store.replace_policy_set({**read, "version": 2}, 1)
    assert (store.policy_set("polset-1") or {})["policy_ids"] == ["pol-a"]
    assert [s["id"] for s in store.policy_sets_of("acme")] == ["polset-1", "polset-2", "polset-4"]  # still listed
    store.delete_policy_set(store.policy_set("polset-1") or {})
    assert store.policy_set("polset-1") is None
    store.create_policy_set(_set("polset-5", "renamed"))


def test_parameters_listed_by_key_and_versions_saved(stores: SimpleNamespace) -> None:
    store: PolicyStore = stores.policies
    for param_id, key in (("var-1", "zeta"), ("var-2", "alpha")):
        store.create_parameter({"id": param_id, "policy_set_id": "polset-1", "key": key, "sensitive": False,
                                "ciphertext": "c", "version": 1})  # fmt: skip
    assert [p["key"] for p in store.parameters_of("polset-1")] == ["alpha", "zeta"]
    read = store.parameter("var-1")
    assert read is not None and not KEYS & set(read)
    store.replace_parameter({**read, "key": "beta", "version": 2}, 1)  # its place in the listing follows its key
    assert [p["key"] for p in store.parameters_of("polset-1")] == ["alpha", "beta"]
    with pytest.raises(Conflict):
        store.replace_parameter({**read, "version": 2}, 1)
    store.delete_parameter("var-2")
    assert [p["id"] for p in store.parameters_of("polset-1")] == ["var-1"] and store.parameter("var-2") is None
    store.create_version(_version("polsetver-1", "polset-1"))
    with pytest.raises(ConditionFailed):
        store.create_version(_version("polsetver-1", "polset-1"))
    store.save_version({**(store.version("polsetver-1") or {}), "status": "ready"})
    assert (store.version("polsetver-1") or {})["status"] == "ready" and store.version("polsetver-9") is None


def test_delete_all_of_an_organization_takes_its_policy_as_code_and_blobs_only(stores: SimpleNamespace) -> None:
    store: PolicyStore = stores.policies
    for org in ("acme", "other"):
        store.create_policy(_policy(f"pol-{org}", "p", org=org))
        store.create_policy_set(_set(f"polset-{org}", "s", org=org))
        store.create_parameter({"id": f"var-{org}", "policy_set_id": f"polset-{org}", "key": "k", "version": 1})
        version = {**_version(f"polsetver-{org}", f"polset-{org}"), "bundle_key": f"policy-bundles/{org}.json"}
        store.create_version(version)
        stores.blobs.put(version["blob_key"], b"tarball")
        stores.blobs.put(version["bundle_key"], b"{}")
    store.delete_all_of(organization="acme")
    assert store.policy("pol-acme") is None and store.policy_set("polset-acme") is None
    assert store.parameter("var-acme") is None and store.version("polsetver-acme") is None
    assert sorted(stores.blobs.objects) == [
        "policy-bundles/other.json",
        "policy-uploads/polset-other/polsetver-other.tar.gz",
    ]
    store.create_policy(_policy("pol-again", "p"))  # the claims went too
    store.create_policy_set(_set("polset-again", "s"))
    assert store.policy("pol-other") and store.policy_set("polset-other") and store.parameter("var-other")
    assert store.version("polsetver-other") is not None


def _evaluation(evaluation_id: str, run_id: str, stage_id: str, created_at: str = T0) -> dict[str, Any]:
    return {"id": evaluation_id, "run_id": run_id, "stage_id": stage_id, "workspace_id": "ws-1", "organization": "acme",
            "status": "pending", "policy_set_ids": ["polset-1"], "created_at": created_at, "updated_at": created_at,
            "status_timestamps": {}, "version": 1}  # fmt: skip


def _outcome(outcome_id: str, evaluation_id: str) -> PolicySetOutcome:
    return PolicySetOutcome(id=outcome_id, evaluation_id=evaluation_id, policy_set_id="polset-1",
                            policy_set_name="s", policy_set_description="", overridable=False)  # fmt: skip


def test_evaluations_are_listed_per_stage_and_run_and_change_from_the_version_read(stores: SimpleNamespace) -> None:
    store: EvaluationStore = stores.runs
    assert store.create(_evaluation("poleval-2", "run-1", "ts-1", T1))
    assert store.create(_evaluation("poleval-1", "run-1", "ts-1", T0))
    assert not store.create(_evaluation("poleval-1", "run-1", "ts-1"))  # once
    assert [e.id for e in store.of_stage("ts-1")] == ["poleval-1", "poleval-2"]
    assert sorted(e.id for e in store.of_run("run-1")) == ["poleval-1", "poleval-2"] and store.of_run("run-9") == []
    assert sorted(e.id for e in store.by_ids(["poleval-2", "poleval-1", "poleval-9"])) == ["poleval-1", "poleval-2"]
    read = store.evaluation("poleval-1")
    assert read is not None and not KEYS & set(read)
    assert store.replace({**read, "status": "running", "version": 2}, 1)
    assert not store.replace({**read, "status": "errored", "version": 2}, 1)  # lost: nothing written
    staged = Put({"pk": "outbox", "sk": "e-1", "event": {}})
    assert not store.replace({**read, "version": 2}, 1, staged=staged)  # nor its staged event
    assert stores.table.get("outbox", "e-1") is None
    assert store.replace({**read, "status": "passed", "version": 3}, 2, staged=staged)  # both in one transaction
    assert stores.table.get("outbox", "e-1") is not None
    assert [e.status for e in store.of_stage("ts-1")] == ["passed", "pending"]


def test_outcomes_and_slots(stores: SimpleNamespace) -> None:
    store: EvaluationStore = stores.runs
    for outcome_id in ("psout-1-001", "psout-1-000"):
        store.put_outcome(_outcome(outcome_id, "poleval-1"))
    store.put_outcome(_outcome("psout-1-000", "poleval-1"))  # a repeated delivery writes the same one
    assert [o.id for o in store.outcomes_of("poleval-1")] == ["psout-1-000", "psout-1-001"]
    assert store.outcome("psout-1-000") == _outcome("psout-1-000", "poleval-1") and store.outcome("psout-9") is None
    assert sorted(o.id for o in store.outcomes(["psout-1-001", "psout-1-000"])) == ["psout-1-000", "psout-1-001"]
    assert store.slots("acme") is None
    store.save_slots("acme", {"leases": {"a": 10}, "version": 1, "expires_at": 20}, None)
    with pytest.raises(ConditionFailed):
        store.save_slots("acme", {"leases": {}, "version": 1, "expires_at": 20}, None)  # created once
    with pytest.raises(ConditionFailed):
        store.save_slots("acme", {"leases": {}, "version": 3, "expires_at": 20}, 2)
    store.save_slots("acme", {"leases": {}, "version": 2, "expires_at": 30}, 1)
    assert store.slots("acme") == {"leases": {}, "version": 2, "expires_at": 30} and store.slots("other") is None


def test_delete_all_of_a_run_takes_its_evaluations_outcomes_and_pointers_only(stores: SimpleNamespace) -> None:
    store: EvaluationStore = stores.runs
    for run_id in ("run-1", "run-2"):
        store.create(_evaluation(f"poleval-{run_id}", run_id, f"ts-{run_id}"))
        store.put_outcome(_outcome(f"psout-{run_id}-000", f"poleval-{run_id}"))
    store.delete_all_of(run="run-1")
    assert store.of_run("run-1") == [] and store.evaluation("poleval-run-1") is None
    assert store.outcome("psout-run-1-000") is None and stores.table.query("run-1#policy-evaluations") == []
    assert [e.id for e in store.of_run("run-2")] == ["poleval-run-2"] and store.outcomes_of("poleval-run-2")


# the services on each table ------------------------------------------------------------------------------------
@pytest.fixture
def container(table: Table) -> Container:
    settings = Settings(table_name="t", blob_bucket="b", url_signing_secret="s")
    return Container(settings=settings, table=table, blobs=MemoryBlobs())


def _tar(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return buffer.getvalue()


def test_policies_sets_parameters_and_versions_through_the_services(container: Container) -> None:
    user = container.accounts.create_user("alice", "alice@example.com")
    me = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(me, "acme", "ops@example.com")
    ws = container.workspaces.create(me, "acme", {"name": "prod"})
    attrs = {"name": "p", "kind": "opa", "query": "data.terraform.policies.p.deny", "enforcement-level": "mandatory"}
    policy = container.policies.create(me, "acme", attrs)
    with pytest.raises(Invalid):
        container.policies.create(me, "acme", attrs)  # the name claim holds on every table
    container.policies.upload(me, policy.id, REGO.encode())
    assert container.policies.download(me, policy.id) == REGO.encode()
    ps = container.policy_sets.create(me, "acme", {"name": "guard", "kind": "opa"}, {"policies": [policy.id]})
    container.policy_sets.change_members(me, ps.id, "workspaces", [ws.id], add=True)
    assert [s.id for s in container.policy_sets.applying_to(container.workspaces.load(ws.id))] == [ps.id]
    assert container.policy_sets.policy_set_count(me, "acme") == {policy.id: 1}
    param = container.policy_set_parameters.create(me, ps.id, {"key": "k", "value": "v", "category": "policy-set",
                                                                "sensitive": True})  # fmt: skip
    assert param.value == "" and container.policy_set_parameters.values(ps.id) == {"k": "v"}
    version = container.policy_set_versions.create(me, ps.id)
    container.blobs.put(version.blob_key, _tar({"policies.hcl": HCL, "p.rego": REGO}))
    assert container.policy_set_versions.landed(version.blob_key).status == "ready"  # type: ignore[union-attr]
    ready = container.policy_sets.get(me, ps.id)
    assert ready.current_version_id == version.id == ready.newest_version_id
    assert [p.name for p in container.policy_set_versions.bundle_of(ready).policies] == ["p"]
    container.policies.delete(me, policy.id)
    assert container.policy_sets.get(me, ps.id).policy_ids == ()
    container.policy_sets.delete(me, ps.id)
    with pytest.raises(NotFound):
        container.policy_sets.get(me, ps.id)
