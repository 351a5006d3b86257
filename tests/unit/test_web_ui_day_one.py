"""Day-one pages of the web UI (issue 45, second step): no "Queue plan" for a workspace without a configuration,
organization settings that only offer what works, one comment box on a run, moving a workspace to a project."""

from __future__ import annotations

from run_helpers import make_run_env
from test_web_ui_runs import csrf_of, ui

BASE = "/app/acme/workspaces/app"


def test_no_queue_plan_until_a_configuration_is_uploaded() -> None:
    env = make_run_env()
    client = ui(env)
    for page in (BASE, f"{BASE}/runs"):
        html = client.get(page).text
        assert "Queue plan" not in html and 'id="no-configuration"' in html, page
    env.upload_config()
    for page in (BASE, f"{BASE}/runs"):
        html = client.get(page).text
        assert "Queue plan" in html and 'id="no-configuration"' not in html, page


def test_organization_settings_offer_no_session_settings_that_change_nothing() -> None:
    env = make_run_env()
    client = ui(env)
    page = client.get("/app/acme/settings").text
    assert "Session timeout" not in page and "session_timeout" not in page and "Session expiration" not in page
    data = {"csrf_token": csrf_of(page), "name": "acme", "email": "ops@example.com", "default_execution_mode": "remote",
            "session_timeout": "60"}  # fmt: skip
    assert client.post("/app/acme/settings", data=data).status_code == 303
    assert "session-timeout" not in env.container.organizations.lookup("acme").settings
