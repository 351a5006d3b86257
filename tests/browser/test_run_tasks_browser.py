"""Run tasks and task stages in chromium: add a run task in the organization's settings (a refused URL first),
attach it on the workspace's Run tasks tab, then a run's page shows its post-plan stage with the task's result
(status, message, link) and, while the stage awaits an override, the Override button that lets the run go on.

Serves the real app (in-memory adapters) with uvicorn; the run is driven through the services a runner and a run
task service call (the runner protocol, the delivery, the callback)."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from terrace.adapters.memory_events import MemoryEventPublisher
from terrace.adapters.memory_outbound import MemoryOutbound
from terrace.bootstrap import build_memory
from terrace.domain.jobs import FinishRequest
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services import shared_keys
from terrace.services.events import landed_event
from terrace.services.runs.stage_participants import StageContext, Verdict

from .conftest import serve_app, shoot

playwright_api = pytest.importorskip("playwright.sync_api")


@dataclass
class Policy:
    """A stand-in for a policy evaluation that failed and may be overridden (what OPA policy sets report)."""

    kind: str = "policy-evaluations"

    def begin(self, context: StageContext) -> list[str]:
        return ["poleval-stand-in"] if context.stage == "post_plan" else []

    def verdict(self, context: StageContext) -> Verdict:
        return "awaiting_override"

    def overridden(self, context: StageContext) -> None:
        pass


@pytest.fixture
def stack(free_port: int) -> Iterator[tuple[str, str, Any]]:
    container = build_memory()
    container.stage_participants.append(Policy())
    user = container.accounts.create_user("alice", "alice@example.com")
    owner = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(owner, "acme", "ops@example.com")
    container.workspaces.create(owner, "acme", {"name": "app", "execution-mode": "remote"})
    container.table.put(shared_keys.stage_usage_marker("acme", Policy.kind))  # as a policy set of its own would
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    with serve_app(container, free_port) as base:
        yield base, token, container


def handle_events(container: Any, publisher: MemoryEventPublisher) -> None:
    """What the events worker does with what was published."""
    while publisher.events:
        pending, publisher.events[:] = list(publisher.events), []
        for event in pending:
            container.events.handle(event)


def plan_a_run(container: Any) -> str:
    """Upload a configuration, create a run, plan it as a runner does, and answer its run task (passed)."""
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
    container.jobs.finish(runner, spec.job_id, FinishRequest(runner_id="r1", status="finished", has_changes=True))
    publisher = container.publisher
    assert isinstance(publisher, MemoryEventPublisher) and isinstance(container.outbound, MemoryOutbound)
    handle_events(container, publisher)  # the delivery: the request goes out
    payload = json.loads(container.outbound.sent[-1].body)
    task_token = container.accounts.authenticate(payload["access_token"])
    body = {"data": {"type": "task-results", "attributes": {"status": "passed", "message": "no findings",
            "url": "https://checks.example.com/report/1"}}}  # fmt: skip
    container.task_results.callback(task_token, payload["task_result_id"], body)
    handle_events(container, publisher)
    assert container.runs.get(owner, run.id).status == "post_plan_awaiting_decision"
    return str(run.id)


def test_manage_attach_and_override_in_the_browser(stack: tuple[str, str, Any], page: Any) -> None:
    base, token, container = stack
    expect = playwright_api.expect
    page.goto(f"{base}/app")
    page.get_by_label("API token").fill(token)
    page.keyboard.press("Enter")
    page.get_by_role("link", name="acme").click()
    page.get_by_role("link", name="Run tasks").click()
    expect(page.get_by_role("heading", name="Run tasks")).to_be_visible()
    page.get_by_label("Name").fill("checks")
    page.get_by_label("Endpoint URL").fill("http://169.254.169.254/latest")
    page.get_by_role("button", name="Add run task").click()
    expect(page.locator("#url-error")).to_contain_text("link-local address")
    shoot(page, "run-tasks-error")
    page.get_by_label("Endpoint URL").fill("https://checks.example.com/hook")
    page.get_by_label("HMAC key (optional, write only)").fill("s3cret")
    page.get_by_role("button", name="Add run task").click()
    expect(page.get_by_role("cell", name="checks", exact=True)).to_be_visible()
    [task] = container.run_tasks.of_organization("acme")
    assert task.hmac_ciphertext and "s3cret" not in page.content()
    shoot(page, "run-tasks")

    page.goto(f"{base}/app/acme/workspaces/app/tasks")
    page.get_by_label("Enforcement").select_option("mandatory")
    page.get_by_role("button", name="Attach").click()
    expect(page.get_by_role("cell", name="post-plan")).to_be_visible()
    shoot(page, "workspace-run-tasks")

    run_id = plan_a_run(container)
    page.goto(f"{base}/app/acme/workspaces/app/runs/{run_id}")
    stage = page.get_by_role("region", name="post-plan stage")
    expect(stage.get_by_text("awaiting override")).to_be_visible()
    expect(stage.get_by_role("cell", name="no findings Details")).to_be_visible()
    expect(stage.get_by_role("link", name="Details")).to_have_attribute("href", "https://checks.example.com/report/1")
    shoot(page, "run-task-stage")
    stage.get_by_label("Reason").fill("accepted for the demo")
    stage.get_by_role("button", name="Override and continue").click()
    expect(page.locator("#run-status")).to_have_text("Needs confirmation")
    expect(page.get_by_role("button", name="Confirm & apply")).to_be_visible()
    shoot(page, "run-task-stage-overridden")
