"""Policies in chromium, over the real app and policy engine (in-memory adapters, the run's plan driven through the
runner protocol's services): an owner sets an existing policy's enforcement and uploads new Rego from the policies
page (Rego that does not compile is refused with the engine's message and changes nothing), the run page shows each
policy's result and messages, and the Override button only to those allowed: a member who may read the workspace
but not override policies sees the results without it."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from terrace.adapters.memory_events import MemoryEventPublisher
from terrace.bootstrap import build_memory
from terrace.domain.jobs import FinishRequest
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services.events import landed_event

from .conftest import serve_app, shoot

playwright_api = pytest.importorskip("playwright.sync_api")

ADVISE = """package terraform.policies.no_null
import rego.v1

deny contains msg if {
    some rc in input.plan.resource_changes
    rc.type == "null_resource"
    msg := sprintf("%s: advice only", [rc.address])
}
"""
REVIEW = ADVISE.replace("advice only", "needs a review")
JSONAPI = {"Content-Type": "application/vnd.api+json"}


@pytest.fixture
def stack(free_port: int) -> Iterator[tuple[str, dict[str, str], Any]]:
    """The app; tokens of alice (owner of acme) and bob (a member whose team may read workspaces only)."""
    container = build_memory()
    alice = container.accounts.create_user("alice", "alice@example.com")
    owner = Principal(PrincipalKind.USER, alice.id, alice.username)
    container.organizations.create(owner, "acme", "ops@example.com")
    container.workspaces.create(owner, "acme", {"name": "app", "execution-mode": "remote"})
    bob = container.accounts.create_user("bob", "bob@example.com")
    tokens = {name: container.accounts.issue_token(PrincipalKind.USER, user.id).secret
              for name, user in (("alice", alice), ("bob", bob))}  # fmt: skip
    with serve_app(container, free_port) as base:
        as_alice = httpx.Client(base_url=base, headers={**JSONAPI, "Authorization": f"Bearer {tokens['alice']}"})
        as_bob = httpx.Client(base_url=base, headers={**JSONAPI, "Authorization": f"Bearer {tokens['bob']}"})
        invite = {"data": {"type": "organization-memberships",
                           "relationships": {"user": {"data": {"type": "users", "id": "bob"}}}}}  # fmt: skip
        assert as_alice.post("/api/v2/organizations/acme/organization-memberships", json=invite).status_code == 202
        [mine] = as_bob.get("/api/v2/organization-memberships").json()["data"]
        assert as_bob.post(f"/api/v2/organization-memberships/{mine['id']}/actions/accept").status_code == 200
        team = as_alice.post("/api/v2/organizations/acme/teams", json={"data": {"type": "teams", "attributes": {
            "name": "readers", "organization-access": {"read-workspaces": True}}}}).json()["data"]  # fmt: skip
        added = as_alice.post(f"/api/v2/teams/{team['id']}/relationships/users",
                              json={"data": [{"type": "users", "id": "bob"}]})  # fmt: skip
        assert added.status_code == 204, added.text
        as_alice.close()
        as_bob.close()
        yield base, tokens, container


def plan_a_run(container: Any) -> str:
    """A run of acme/app planned as a runner does (one null resource in its JSON plan); the events worker then
    evaluates its policies. Returns its id."""
    owner = container.accounts.authenticate(container.accounts.issue_token(PrincipalKind.USER,
        container.accounts.user_id_of("alice")).secret)  # fmt: skip
    ws = container.workspaces.get_by_name(owner, "acme", "app")
    cv = container.configuration_versions.create(owner, ws, {"auto-queue-runs": False})
    buffer, data = io.BytesIO(), b'resource "null_resource" "a" {}\n'
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("main.tf")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    key = f"config/{ws.id}/{cv.id}.tar.gz"
    container.blobs.put(key, buffer.getvalue())
    container.events.handle(landed_event(key))
    run = container.runs.create(owner, ws, {"message": "from the browser test"}, cv.id)
    runner = container.accounts.authenticate(container.runner_credentials.runner_token("acme"))
    spec = container.jobs.next(runner, "r1")
    plan_key = spec.plan_json_upload_url.split("memory://blobs/")[1].split("?")[0]
    change = {"address": "null_resource.a", "type": "null_resource", "change": {"actions": ["create"]}}
    container.blobs.put(plan_key, json.dumps({"format_version": "1.2", "resource_changes": [change]}).encode())
    container.jobs.finish(runner, spec.job_id, FinishRequest(runner_id="r1", status="finished", has_changes=True))
    publisher = container.publisher
    assert isinstance(publisher, MemoryEventPublisher)
    while publisher.events:  # the events worker: the evaluation (regopy in its child process), the stage
        pending, publisher.events[:] = list(publisher.events), []
        for event in pending:
            container.events.handle(event)
    assert container.runs.get(owner, run.id).status == "post_plan_awaiting_decision"
    return str(run.id)


def sign_in(page: Any, base: str, token: str) -> None:
    page.goto(f"{base}/app")
    page.get_by_label("API token").fill(token)
    page.keyboard.press("Enter")
    playwright_api.expect(page.get_by_role("link", name="acme")).to_be_visible()


def test_set_enforcement_upload_rego_and_override_only_when_allowed(
    stack: tuple[str, dict[str, str], Any], page: Any
) -> None:
    base, tokens, container = stack
    expect = playwright_api.expect
    sign_in(page, base, tokens["alice"])
    page.goto(f"{base}/app/acme/policies")
    page.get_by_label("Name", exact=True).first.fill("no_null")
    page.get_by_label("Enforcement", exact=True).select_option("advisory")
    page.get_by_label("Rego", exact=True).fill(ADVISE)
    page.get_by_role("button", name="Create policy", exact=True).click()
    policies = page.locator("#policies")
    expect(policies.get_by_role("cell", name="advisory", exact=True)).to_be_visible()

    # set enforcement and upload new Rego on the existing policy: a broken text is refused, nothing changes
    page.get_by_label("Enforcement of no_null").select_option("mandatory")
    page.get_by_label("New Rego (optional)").fill("package terraform.policies.no_null\ndeny contains msg if {\n")
    page.get_by_role("button", name="Save no_null").click()
    expect(page.get_by_role("alert")).to_contain_text("does not compile")
    [policy] = container.policies.list(container.accounts.authenticate(tokens["alice"]), "acme")
    assert policy.enforcement_level == "advisory"  # the refused change left the policy as it was
    page.get_by_label("Enforcement of no_null").select_option("mandatory")
    page.get_by_label("New Rego (optional)").fill(REVIEW)
    page.get_by_role("button", name="Save no_null").click()
    expect(policies.get_by_role("cell", name="mandatory", exact=True)).to_be_visible()
    shoot(page, "policy-changed")

    page.locator("#set-name").fill("guard")
    expect(page.locator("#set-policies").get_by_label("no_null", exact=True)).to_be_checked()  # its policies
    page.get_by_label("Workspaces (names, comma-separated)").fill("app")
    page.get_by_label("Mandatory failures may be overridden").check()
    page.get_by_role("button", name="Create policy set").click()
    expect(page.locator("#policy-sets")).to_contain_text("guard")

    run_id = plan_a_run(container)
    run_page = f"{base}/app/acme/workspaces/app/runs/{run_id}"
    page.goto(run_page)
    results = page.locator("#run-policies")
    expect(results).to_contain_text("no_null (mandatory)")
    expect(results.locator(".policy-message")).to_have_text(["null_resource.a: needs a review"])  # the new Rego's
    expect(page.get_by_role("button", name="Override and continue")).to_be_visible()

    page.context.clear_cookies()
    sign_in(page, base, tokens["bob"])
    page.goto(run_page)
    expect(page.locator("#run-policies .policy-message")).to_have_text(["null_resource.a: needs a review"])
    expect(page.get_by_role("region", name="post-plan stage")).to_contain_text("awaiting override")
    expect(page.get_by_role("button", name="Override and continue")).to_have_count(0)
    shoot(page, "run-policy-reader")
