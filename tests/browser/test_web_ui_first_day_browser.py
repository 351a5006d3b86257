"""The first-day bugs of the web UI (issue 24), each in chromium against the real app (in-memory adapters) served
by uvicorn on localhost; runs are worked by a scripted runner over the runner API's HTTP. Screenshots of each page,
at phone and desktop width, go to .build/screenshots."""

from __future__ import annotations

import io
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import uvicorn
from terrace.bootstrap import Container, build_memory
from terrace.config import Settings
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services.events import landed_event
from terrace.web.app import create_app

from .conftest import shoot

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect
DEADLINE_S = 30


def wait_for(probe: Callable[[], Any], what: str, timeout: float = DEADLINE_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := probe()):
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.1)
    return found


@dataclass
class UI:
    base: str
    token: str
    container: Container
    api: httpx.Client  # alice's API client (JSON:API)
    runner: httpx.Client  # the organization's runner

    def workspace(self, name: str, mode: str = "remote") -> str:
        body = {"data": {"type": "workspaces", "attributes": {"name": name, "execution-mode": mode}}}
        created = self.api.post("/api/v2/organizations/acme/workspaces", json=body)
        assert created.status_code == 201, created.text
        return str(created.json()["data"]["id"])

    def upload_config(self, ws_id: str) -> str:
        """A CLI's upload: a configuration version, its archive landed in the blob store and the landing handled."""
        body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
        created = self.api.post(f"/api/v2/workspaces/{ws_id}/configuration-versions", json=body)
        assert created.status_code == 201, created.text
        cv = created.json()["data"]
        key = cv["attributes"]["upload-url"].split("memory://blobs/")[1].split("?")[0]
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            data = b'output "x" { value = 1 }\n'
            info = tarfile.TarInfo("main.tf")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        self.container.blobs.put(key, buffer.getvalue())
        self.container.events.handle(landed_event(key))
        return str(cv["id"])

    def create_run(self, ws_id: str) -> httpx.Response:
        body = {
            "data": {
                "type": "runs",
                "attributes": {"message": "from the CLI"},
                "relationships": {"workspace": {"data": {"type": "workspaces", "id": ws_id}}},
            }
        }
        return self.api.post("/api/v2/runs", json=body)

    def claim(self) -> dict[str, Any]:
        got = self.runner.post("/api/runner/jobs/next", json={"runner_id": "r1"})
        assert got.status_code == 200, got.text
        return dict(got.json())

    def sign_in(self, page: Any) -> None:
        page.goto(f"{self.base}/app/sign-in")
        page.get_by_label("API token").fill(self.token)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", name="Organizations")).to_be_visible()


@pytest.fixture
def ui(free_port: int) -> Iterator[UI]:
    settings = Settings(table_name="memory", blob_bucket="memory", url_signing_secret="test-secret")
    container = build_memory(settings)  # public URL https://localhost:8443: the CLI snippets' host and port
    user = container.accounts.create_user("alice", "alice@example.com")
    container.organizations.create(Principal(PrincipalKind.USER, user.id, user.username), "acme", "ops@example.com")
    token = container.accounts.issue_token(PrincipalKind.USER, user.id, description="laptop").secret
    server = uvicorn.Server(
        uvicorn.Config(create_app(container), host="127.0.0.1", port=free_port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "the web server", timeout=15)
    base = f"http://localhost:{free_port}"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    runner_token = container.runner_credentials.runner_token("acme")
    with (
        httpx.Client(base_url=base, headers=headers, timeout=30) as api,
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {runner_token}"}, timeout=30) as runner,
    ):
        yield UI(base, token, container, api, runner)
    server.should_exit = True
    thread.join(timeout=15)


def test_a_deep_link_survives_sign_in_and_only_to_this_ui(ui: UI, page: Any) -> None:
    ws_id = ui.workspace("web")
    ui.upload_config(ws_id)
    run_id = ui.create_run(ws_id).json()["data"]["id"]
    page.goto(f"{ui.base}/app/acme/web/runs/{run_id}")  # the URL terraform prints, opened while signed out
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    shoot(page, "first-day-sign-in-deep-link")
    page.get_by_label("API token").fill(ui.token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#run-status")).to_be_visible()
    assert page.url == f"{ui.base}/app/acme/workspaces/web/runs/{run_id}"

    page.get_by_role("button", name="Sign out").click()
    page.goto(f"{ui.base}/app/acme/workspaces?search=we")  # the query string is part of the deep link
    page.get_by_label("API token").fill(ui.token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("link", name="web", exact=True)).to_be_visible()
    assert page.url == f"{ui.base}/app/acme/workspaces?search=we"

    # another site's address, however written, is never where signing in goes
    for target in ("https://evil.example/app/x", "//evil.example/app/", "/\\evil.example", "/app/\\evil.example"):
        page.get_by_role("button", name="Sign out").click()
        page.goto(f"{ui.base}/app/sign-in?next={quote(target)}")
        page.get_by_label("API token").fill(ui.token)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", name="Organizations")).to_be_visible()
        assert page.url == f"{ui.base}/app", target


def test_a_local_workspace_offers_no_plan_and_the_api_refuses_its_runs(ui: UI, page: Any) -> None:
    ws_id = ui.workspace("laptop", mode="local")
    ui.upload_config(ws_id)
    refused = ui.create_run(ws_id)
    assert refused.status_code == 409, refused.text
    [error] = refused.json()["errors"]
    assert error["status"] == "409" and "local execution mode" in error["detail"], error
    assert ui.api.get(f"/api/v2/workspaces/{ws_id}/runs").json()["data"] == []  # nothing half-written

    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces/laptop")
    expect(page.locator("#local-execution")).to_contain_text("local")
    expect(page.get_by_role("button", name="Queue plan")).to_have_count(0)
    expect(page.get_by_role("button", name="Lock workspace")).to_be_visible()  # state locking still works
    shoot(page, "first-day-local-workspace")
    page.get_by_role("link", name="Runs").click()
    expect(page.locator("#local-execution")).to_be_visible()
    expect(page.get_by_role("button", name="Queue plan")).to_have_count(0)


def test_a_run_held_lock_links_the_run_and_lock_errors_stay_on_the_page(ui: UI, page: Any) -> None:
    ws_id = ui.workspace("web")
    ui.upload_config(ws_id)
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces/web")
    expect(page.get_by_role("button", name="Lock workspace")).to_be_visible()
    run_id = ui.create_run(ws_id).json()["data"]["id"]  # meanwhile, the CLI's run takes the lock
    page.get_by_role("button", name="Lock workspace").click()
    expect(page.get_by_role("heading", name="web")).to_be_visible()  # the workspace page, not a bare 409 page
    expect(page.get_by_role("alert")).to_contain_text(f"locked by Run {run_id}")
    shoot(page, "first-day-lock-refused")

    page.goto(f"{ui.base}/app/acme/workspaces/web")
    expect(page.locator("#lock-state")).to_contain_text("Locked by run")
    for name in ("Unlock workspace", "Force unlock", "Lock workspace"):  # a run's lock ends with the run
        expect(page.get_by_role("button", name=name)).to_have_count(0)
    shoot(page, "first-day-run-lock")
    page.locator("#lock-state").get_by_role("link", name=run_id).click()
    expect(page.locator("#run-status")).to_be_visible()
    page.get_by_role("button", name="Cancel run").click()  # pending: canceled at once, the lock released
    expect(page.locator("#run-status")).to_have_text("Canceled")

    # someone else's lock (the organization's token): force-unlock is offered to the owner, who may
    org_token = Principal(PrincipalKind.ORGANIZATION, "acme", "api-org-acme", organization="acme")
    ui.container.locks.lock(org_token, ui.container.workspaces.load(ws_id), "maintenance")
    page.goto(f"{ui.base}/app/acme/workspaces/web")
    expect(page.locator("#lock-state")).to_contain_text("maintenance")
    expect(page.get_by_role("button", name="Unlock workspace")).to_have_count(0)
    shoot(page, "first-day-force-unlock")
    page.get_by_role("button", name="Force unlock").click()
    expect(page.get_by_role("button", name="Lock workspace")).to_be_visible()
    assert ui.container.workspaces.load(ws_id).lock is None


def test_no_page_under_app_answers_json(ui: UI, page: Any) -> None:
    ui.workspace("web")
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme")
    expect(page.get_by_role("link", name="web", exact=True)).to_be_visible()
    assert page.url == f"{ui.base}/app/acme/workspaces"
    page.goto(f"{ui.base}/")
    expect(page.get_by_role("heading", name="Organizations")).to_be_visible()
    pages = {
        "/app/acme/nothing": 404,  # (an organization page that does not exist; /settings now does)
        "/app/acme/workspaces/wbe": 404,  # a typo'd workspace
        "/app/acme/workspaces/web/runs/run-nope/logs/plan": 404,
        "/app/acme/workspaces/web/nothing/here": 404,
        "/app/acme/workspaces/web/lock": 405,  # a form's POST address, visited
        "/app/acme/workspaces/web/runs/run-x/logs/plan?offset=abc": 422,
    }
    for path, status in pages.items():
        response = page.goto(f"{ui.base}{path}")
        assert response is not None and response.status == status, (path, response and response.status)
        assert response.headers["content-type"].startswith("text/html"), path
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        expect(page.get_by_role("button", name="Sign out")).to_be_visible()  # inside the app's layout
        assert '"errors"' not in page.content(), path
    shoot(page, "first-day-not-found")


def test_the_tokens_page_cli_snippets_keep_the_port(ui: UI, page: Any) -> None:
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/account/tokens")
    expect(page.get_by_text("terraform login localhost:8443")).to_be_visible()
    expect(page.get_by_text('credentials "localhost:8443"')).to_be_visible()
    assert "TF_TOKEN_localhost" not in page.content()  # terraform has no such variable for a host with a port


def test_a_new_token_is_post_redirect_get_and_its_secret_shown_once(ui: UI, page: Any) -> None:
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/account/tokens")
    user_id = ui.container.accounts.find_user("alice").id
    before = len(ui.container.accounts.list_tokens(user_id))
    page.get_by_label("Description").fill("ci")
    with page.expect_navigation() as shown:
        page.get_by_role("button", name="Create token").click()
    response = shown.value
    assert response is not None and response.request.method == "GET"  # the POST answered a redirect
    assert response.request.redirected_from is not None
    assert response.headers.get("cache-control") == "no-store"
    secret = page.locator("#new-token").inner_text()
    assert ui.container.accounts.authenticate(secret).username == "alice"
    assert page.url == f"{ui.base}/app/account/tokens"  # the secret is in no URL
    shoot(page, "first-day-token-created")
    page.reload()  # no new token, and the secret is not shown again
    expect(page.get_by_role("heading", name="API tokens")).to_be_visible()
    expect(page.locator("#new-token")).to_have_count(0)
    assert len(ui.container.accounts.list_tokens(user_id)) == before + 1


def test_a_tokens_last_use_is_recorded_and_shown(ui: UI, page: Any) -> None:
    user_id = ui.container.accounts.find_user("alice").id
    secret = ui.container.accounts.issue_token(PrincipalKind.USER, user_id, description="ci").secret
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/account/tokens")
    row = page.get_by_role("row").filter(has_text="ci")
    expect(row).to_contain_text("never")
    for _ in range(3):  # a busy client: its first use is recorded, the next ones within the period write nothing
        used = httpx.get(f"{ui.base}/api/v2/account/details", headers={"Authorization": f"Bearer {secret}"})
        assert used.status_code == 200, used.text
    page.reload()
    expect(row.locator("time")).to_contain_text("UTC")
    expect(row).not_to_contain_text("never")
    shoot(page, "first-day-tokens")


def test_a_variable_terraform_cannot_read_is_accepted_and_warned_about(ui: UI, page: Any) -> None:
    ws_id = ui.workspace("web")
    body = {"data": {"type": "vars", "attributes": {"key": "odd key!", "value": "1", "category": "terraform"}}}
    accepted = ui.api.post(f"/api/v2/workspaces/{ws_id}/vars", json=body)
    assert accepted.status_code == 201, accepted.text  # as TFC: any key
    ui.api.delete(f"/api/v2/workspaces/{ws_id}/vars/{accepted.json()['data']['id']}")

    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces/web/variables")
    expect(page.locator("#unreadable-keys")).to_have_count(0)
    page.get_by_label("Key").fill("bad key!")
    page.get_by_label("Value").fill("eu-west-1")
    page.get_by_role("button", name="Add variable").click()
    expect(page.get_by_role("cell", name="eu-west-1")).to_be_visible()  # saved
    warning = page.locator("#unreadable-keys")
    expect(warning).to_contain_text("Every plan of this workspace will fail")
    expect(warning).to_contain_text("bad key!")
    shoot(page, "first-day-variable-warning")
    page.get_by_role("link", name="Edit bad key!").click()
    page.get_by_label("Key").fill("region")
    page.get_by_role("button", name="Save variable").click()
    expect(page.get_by_role("cell", name="eu-west-1")).to_be_visible()
    expect(page.locator("#unreadable-keys")).to_have_count(0)


def planning(ui: UI, page: Any) -> tuple[str, dict[str, Any]]:
    """A run whose plan a runner started (terraform has written nothing yet), open in the page."""
    ws_id = ui.workspace("web")
    ui.upload_config(ws_id)
    run_id = ui.create_run(ws_id).json()["data"]["id"]
    spec = ui.claim()
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces/web/runs/{run_id}")
    expect(page.locator("#run-status")).to_have_text("Planning")
    return run_id, spec


def test_the_live_run_page_says_what_runs_and_what_will_not(ui: UI, page: Any) -> None:
    run_id, spec = planning(ui, page)
    expect(page.locator("#plan-log")).to_contain_text("The plan is running")
    expect(page.locator("#plan-log")).not_to_contain_text("Waiting for the plan to start")
    expect(page.locator("#apply-log")).to_contain_text("Waiting for the apply to start")
    shoot(page, "first-day-run-planning")
    cancel = ui.api.post(f"/api/v2/runs/{run_id}/actions/cancel")  # e.g. Ctrl-C in the CLI: no reload here
    assert cancel.status_code == 202, cancel.text
    expect(page.locator("#apply-log")).to_contain_text("will not run", timeout=DEADLINE_S * 1000)
    finish = {"runner_id": "r1", "status": "canceled"}
    assert ui.runner.post(f"/api/runner/jobs/{spec['job_id']}/finish", json=finish).status_code == 200
    expect(page.locator("#run-status")).to_have_text("Canceled", timeout=DEADLINE_S * 1000)
    expect(page.locator("#apply-log")).to_have_text("The apply will not run: the run was canceled.")
    shoot(page, "first-day-run-canceled")


def test_the_live_run_page_follows_the_logs_tail(ui: UI, page: Any) -> None:
    _, spec = planning(ui, page)
    lines = b"".join(b"line %d of the plan\n" % i for i in range(400))
    put = ui.runner.put(f"/api/runner/jobs/{spec['job_id']}/logs?offset=0", content=lines)
    assert put.status_code == 204, put.text
    log = page.locator("#plan-log")
    expect(log).to_contain_text("line 399 of the plan", timeout=DEADLINE_S * 1000)
    at_end = "el => el.scrollHeight - el.scrollTop - el.clientHeight <= 30"
    wait_for(lambda: log.evaluate(at_end), "the log to follow its tail")
    shoot(page, "first-day-run-log-tail")
    log.evaluate("el => { el.scrollTop = 0; }")  # a reader scrolled up to read: left where they are
    more = b"".join(b"more %d\n" % i for i in range(50))
    assert ui.runner.put(f"/api/runner/jobs/{spec['job_id']}/logs?offset={len(lines)}", content=more).status_code == 204
    expect(log).to_contain_text("more 49", timeout=DEADLINE_S * 1000)
    assert log.evaluate("el => el.scrollTop") == 0


def test_the_live_headers_swaps_keep_the_focused_button(ui: UI, page: Any) -> None:
    planning(ui, page)
    page.evaluate(
        """() => { window.liveSwaps = 0;
           document.body.addEventListener('htmx:afterSwap', (e) => {
             if (e.detail.target && e.detail.target.id === 'run-live') window.liveSwaps += 1; }); }"""
    )
    page.get_by_role("button", name="Cancel run").focus()
    wait_for(lambda: page.evaluate("window.liveSwaps") >= 2, "htmx swaps of the live header")
    assert page.evaluate("document.activeElement && document.activeElement.textContent") == "Cancel run"


def test_a_live_page_whose_session_ends_goes_to_sign_in_and_back(ui: UI, page: Any) -> None:
    run_id, _ = planning(ui, page)  # the run page polls every 2 s
    page.context.clear_cookies()  # the session ends (signed out elsewhere, expired)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=DEADLINE_S * 1000)
    page.get_by_label("API token").fill(ui.token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#run-status")).to_have_text("Planning")
    assert page.url == f"{ui.base}/app/acme/workspaces/web/runs/{run_id}"  # the page, not the fragment it polled


def test_deleting_a_variable_asks_first(ui: UI, page: Any) -> None:
    ws_id = ui.workspace("web")
    body = {"data": {"type": "vars", "attributes": {"key": "region", "value": "eu-west-1", "category": "terraform"}}}
    assert ui.api.post(f"/api/v2/workspaces/{ws_id}/vars", json=body).status_code == 201
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces/web/variables")
    questions: list[str] = []

    def answer(dialog: Any, accept: bool) -> None:
        questions.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda dialog: answer(dialog, False))
    page.get_by_role("button", name="Delete region").click()
    expect(page.get_by_role("cell", name="eu-west-1")).to_be_visible()  # declined: nothing was posted
    assert questions and "Delete the variable region?" in questions[0]
    page.once("dialog", lambda dialog: answer(dialog, True))
    page.get_by_role("button", name="Delete region").click()
    expect(page.get_by_role("cell", name="eu-west-1")).to_have_count(0)
    assert len(ui.api.get(f"/api/v2/workspaces/{ws_id}/vars").json()["data"]) == 0
