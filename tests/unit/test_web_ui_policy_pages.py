"""The policy pages of the web UI (issue 45): a policy set's page (its policies, where it applies, its parameters
with sensitive values hidden) and a policy's page (its code as text, the sets it is in); another organization's
set or policy is not found; the policy form's code is compiled once, before the policy is made."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from fastapi.testclient import TestClient
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.adapters.memory_table import MemoryTable
from terrace.adapters.rego_policy_engine import RegoPolicyEngine
from terrace.bootstrap import Container, build_memory
from terrace.config import Settings
from terrace.domain.errors import Invalid, TooLarge
from terrace.domain.policies import CONTENT_MAX_BYTES
from terrace.domain.principal import Principal, PrincipalKind
from terrace.web.app import create_app
from ui_helpers import sign_in

REGO = 'package terraform.policies.no_public\n\ndeny[msg] { msg := "<b>no public buckets</b>" }\n'


def test_a_policy_set_and_a_policys_code_have_their_pages() -> None:
    container = build_memory(Settings(table_name="memory", blob_bucket="memory", url_signing_secret="sign"))
    alice = container.accounts.create_user("alice", "alice@example.com")
    owner = Principal(PrincipalKind.USER, alice.id, "alice")
    container.organizations.create(owner, "acme", "ops@example.com")
    container.workspaces.create(owner, "acme", {"name": "web"})
    policy = container.policies.create_with_content(
        owner, "acme", {"name": "no_public", "kind": "opa", "query": "data.terraform.policies.no_public.deny",
                        "enforcement-level": "mandatory"}, REGO)  # fmt: skip
    ids = container.policy_sets.workspace_ids(owner, "acme", ["web"])
    ps = container.policy_sets.create(owner, "acme", {"name": "guardrails", "kind": "opa", "overridable": True},
                                      {"policies": [policy.id], "workspaces": ids})  # fmt: skip
    container.policy_set_parameters.create(
        owner, ps.id, {"key": "region", "value": "eu-west-1", "category": "policy-set"}
    )
    container.policy_set_parameters.create(
        owner, ps.id, {"key": "secret", "value": "hunter2", "sensitive": True, "category": "policy-set"}
    )
    token = container.accounts.issue_token(PrincipalKind.USER, alice.id).secret
    client = TestClient(create_app(container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(client, token).status_code == 303

    listed = client.get("/app/acme/policies").text
    assert "1 workspace, 0 projects" in listed and "(s)" not in listed
    assert f'href="/app/acme/policy-sets/{ps.id}">guardrails</a>' in listed
    assert f'href="/app/acme/policies/{policy.id}">no_public</a>' in listed
    page = client.get(f"/app/acme/policy-sets/{ps.id}")
    assert page.status_code == 200 and "Policy set guardrails" in page.text
    assert 'id="policy-set-scope">workspaces web</dd>' in page.text and "may be overridden" in page.text
    assert f'href="/app/acme/policies/{policy.id}">no_public</a></td><td>mandatory</td>' in page.text
    assert "<code>region</code></td><td><code>eu-west-1</code>" in page.text
    assert "<code>secret</code></td><td><em>sensitive</em>" in page.text and "hunter2" not in page.text

    code = client.get(f"/app/acme/policies/{policy.id}")
    assert code.status_code == 200 and 'id="policy-code"' in code.text
    assert "package terraform.policies.no_public" in code.text and "&lt;b&gt;no public buckets&lt;/b&gt;" in code.text
    assert f'href="/app/acme/policy-sets/{ps.id}">guardrails</a>' in code.text

    container.organizations.create(owner, "other", "o@example.com")  # the same ids under another organization
    assert client.get(f"/app/other/policy-sets/{ps.id}").status_code == 404
    assert client.get(f"/app/other/policies/{policy.id}").status_code == 404
    assert client.get("/app/acme/policy-sets/polset-nope").status_code == 404


def test_the_run_page_names_each_policy_by_its_set_with_its_messages_next_to_override() -> None:
    from policy_helpers import create_policy, create_set, plan_run
    from run_helpers import make_run_env

    env = make_run_env()
    policy_id = create_policy(env, "no_null")
    create_set(env, "guard", policies=(policy_id,), workspaces=(env.workspace_id,), overridable=True)
    run = plan_run(env, "null_resource")
    client = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(client, env.headers["Authorization"].removeprefix("Bearer ")).status_code == 303
    page = client.get(f"/app/acme/workspaces/app/runs/{run['id']}/live").text
    stage = page[page.index('aria-label="post-plan stage"') :]
    row = stage[stage.index("<td>guard / no_null") : stage.index("</tr>", stage.index("<td>guard / no_null"))]
    assert "policy, mandatory" in row and '<span class="label label-errored">failed</span>' in row
    assert "<li>null_resource.r0 is a null_resource (workspace app)</li>" in row
    assert stage.index("guard / no_null") < stage.index("Override and continue")  # in the same stage, above it
    assert "Needs policy override" in page


def test_counts_read_in_the_right_number() -> None:
    from terrace.web.ui.session import counted

    assert [counted(n, "project") for n in (0, 1, 2)] == ["0 projects", "1 project", "2 projects"]


class CountingEngine(RegoPolicyEngine):
    """The real engine, counting the modules it was asked to compile."""

    def __init__(self) -> None:
        super().__init__()
        self.compiled: list[str] = []

    def check(self, modules: Mapping[str, str]) -> str | None:
        self.compiled.extend(modules)
        return super().check(modules)


def test_a_policy_made_with_its_code_is_compiled_once_and_a_refused_one_leaves_nothing() -> None:
    """The UI's form compiles the Rego once (each compile is a child process of its own), before the policy is
    made; code too large or that does not compile makes no policy."""
    engine = CountingEngine()
    settings = Settings(table_name="memory", blob_bucket="memory", url_signing_secret="sign")
    container = Container(settings=settings, table=MemoryTable(), blobs=MemoryBlobs(), remote_policy_engine=engine)
    alice = container.accounts.create_user("alice", "alice@example.com")
    owner = Principal(PrincipalKind.USER, alice.id, "alice")
    container.organizations.create(owner, "acme", "ops@example.com")
    attrs = {"name": "no_public", "kind": "opa", "query": "data.terraform.policies.no_public.deny",
             "enforcement-level": "mandatory"}  # fmt: skip
    policy = container.policies.create_with_content(owner, "acme", attrs, REGO)
    assert engine.compiled == ["no_public.rego"]
    assert policy.has_content and container.policies.content(policy.id) == REGO
    with pytest.raises(Invalid, match="does not compile") as refused:
        container.policies.create_with_content(owner, "acme", {**attrs, "name": "broken"}, "package x\ndeny {")
    assert refused.value.pointer == "/data/attributes/content"
    with pytest.raises(TooLarge):
        container.policies.create_with_content(owner, "acme", {**attrs, "name": "huge"}, "#" * (CONTENT_MAX_BYTES + 1))
    assert [p.name for p in container.policies.list(owner, "acme")] == ["no_public"]
