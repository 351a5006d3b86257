"""Browser fixtures: Debian's chromium through Playwright, and (for the run journey) a local stack whose
runners really run terraform (as tests/e2e's `run_local_stack`: session-scoped, stopped by its fixture)."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from job_uids import traversable
from terrace.web.app import create_app

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parents[2] / ".build" / "screenshots"
# Generous heartbeat timings: the machine is shared and loaded; nothing here tests retries or cancels.
RUN_SETTINGS = {"job_heartbeat_s": 2, "job_heartbeat_timeout_s": 60, "max_runners": 2, "tool_downloads": False}


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Chromium, launched once for a test file (each test gets a fresh context: no cookie or storage is shared)."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium (make test installs it: apt-get install -y chromium)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    """A phone-width page in a fresh context that accepts the local stack's own CA-signed certificate."""
    context = chromium.new_context(viewport=PHONE, ignore_https_errors=True)
    page = context.new_page()
    page.csp_violations = watch_csp(page)
    yield page
    context.close()
    # every page the test visited rendered and ran with nothing the Content-Security-Policy refused
    assert not page.csp_violations, "the CSP refused:\n" + "\n".join(page.csp_violations)


def watch_csp(page: Any) -> list[str]:
    """The CSP violations chromium reports on `page` (console messages such as "Refused to execute inline
    script because it violates the following Content Security Policy directive ..."), as they arrive."""
    seen: list[str] = []
    page.on("console", lambda message: seen.append(message.text) if "Content Security Policy" in message.text else None)
    return seen


@pytest.fixture(scope="module")
def run_stack() -> Iterator[Any]:
    """A LocalStack with runner processes, reaper and scaler; yields the LocalStack (its `info` and `container`).
    Module-scoped: moto's backends are process-wide, and later tests' `mock_aws` resets them."""
    from terrace.local.stack import LocalStack

    state_dir = traversable(Path(tempfile.mkdtemp(prefix="terrace-browser-runs-")))
    local = LocalStack(port=0, organization="web", state_dir=state_dir, prefix=f"browser-{uuid.uuid4().hex[:8]}")
    local.settings_overrides = dict(RUN_SETTINGS)
    local.start()
    try:
        yield local
    finally:
        local.stop()
        shutil.rmtree(state_dir, ignore_errors=True)


PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


def shoot(page: Any, name: str) -> None:
    """Save the page at phone width (`name.png`) and at desktop width (`name-desktop.png`) in .build/screenshots."""
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    page.set_viewport_size(DESKTOP)
    try:
        page.screenshot(path=str(SHOTS / f"{name}-desktop.png"), full_page=True)
    finally:
        page.set_viewport_size(PHONE)


@contextmanager
def serve_app(container: Any, port: int) -> Iterator[str]:
    """The app over `container` served on `port` (plain HTTP, in a thread) until the block ends: its base URL."""
    server = uvicorn.Server(uvicorn.Config(create_app(container), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert time.monotonic() < deadline, "web server did not start"
        time.sleep(0.05)
    try:
        yield f"http://localhost:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def need_axe() -> None:
    """Skip a test that checks accessibility when axe-core is not installed."""
    if not AXE.exists():
        pytest.skip("no node_modules/axe-core (npm ci installs it, a pinned devDependency in package.json)")


def axe_violations(page: Any) -> list[str]:
    """axe-core's WCAG 2.1 A/AA violations on the page as it is now: "rule: selector" each (empty: none). axe is
    evaluated through the browser's protocol, not a <script> of the page, so the page's CSP stays as served."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8") + "\n;undefined")
    found = page.evaluate(
        """async (tags) => (await window.axe.run(document, {runOnly: {type: 'tag', values: tags}})).violations
             .flatMap(v => v.nodes.map(n => v.id + ': ' + n.target.join(' ')))""",
        AXE_TAGS,
    )
    return list(found)


def assert_accessible(page: Any, sizes: tuple[dict[str, int], ...] = (PHONE, DESKTOP)) -> None:
    """Zero axe-core violations at each size (the viewport is left at the first)."""
    for size in (*sizes[1:], sizes[0]):
        page.set_viewport_size(size)
        found = axe_violations(page)
        assert not found, f"axe-core at {size['width']} px on {page.url}:\n" + "\n".join(found)
