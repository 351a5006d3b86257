"""Policy as code on each table implementation (memory, the embedded server's SQLite, DynamoDB on moto): policies,
policy sets and their members, parameters and a version's landing, through the services as the API calls them."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.bootstrap import Container
from terrace.config import Settings
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal, PrincipalKind

REGO = 'package terraform.policies.p\nimport rego.v1\ndeny contains "no" if { input.plan.bad }\n'
HCL = 'policy "p" {\n  query = "data.terraform.policies.p.deny"\n  enforcement_level = "mandatory"\n}\n'


@pytest.fixture(params=IMPLEMENTATIONS)
def container(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Container]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        settings = Settings(table_name="t", blob_bucket="b", url_signing_secret="s")
        yield Container(settings=settings, table=table, blobs=MemoryBlobs())


def _tar(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return buffer.getvalue()


def test_policies_sets_parameters_and_versions(container: Container) -> None:
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
