"""Settings → Version control: connect a workspace to a repository through one of the organization's OAuth tokens
(provider, identifier, branch, working directory, trigger patterns, tags regex), see it, disconnect it; the webhook
is registered and deleted as through the API; a bad identifier is an inline error that changes nothing; the page is
CSP-clean (no inline script, style or handler)."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_forge import MemoryForge
from terrace.web.app import create_app
from test_vcs_gitlab import PROJECT, TOKEN, gitlab_client
from test_web_ui import csrf_of
from ui_helpers import sign_in

PAGE = "/app/acme/workspaces/app/settings/version-control"


def _browser(env: RunEnv) -> TestClient:
    client = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(client, env.headers["Authorization"].removeprefix("Bearer ")).status_code == 303
    return client


def _csp_clean(html: str) -> bool:
    inline_script = re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)
    return inline_script is None and not re.search(r"\sstyle=|\son[a-z]+=", html)


def test_connect_show_and_disconnect_a_repository() -> None:
    env = make_run_env()
    forge = env.container.forge
    assert isinstance(forge, MemoryForge)
    forge.add(PROJECT, TOKEN)
    client = _browser(env)
    empty = client.get(PAGE)
    assert empty.status_code == 200 and "No repository is connected" in empty.text and "oauth-clients" in empty.text
    token = gitlab_client(env)
    page = client.get(PAGE)
    assert page.status_code == 200 and f'value="{token}"' in page.text and "GitLab.com" in page.text
    assert _csp_clean(page.text)
    form = {"oauth_token_id": token, "identifier": PROJECT, "branch": "", "working_directory": "envs/prod",
            "trigger_patterns": "/modules/**/*.tf\n\n envs/prod/*.tf ", "tags_regex": r"^v\d+$"}  # fmt: skip
    assert client.post(PAGE, data=form).status_code == 403  # no CSRF token
    bad = client.post(PAGE, data={**form, "identifier": "not a repository", "csrf_token": csrf_of(page.text)})
    assert bad.status_code == 422 and 'role="alert"' in bad.text and 'value="not a repository"' in bad.text
    assert re.search(r'id="identifier"[^>]*aria-invalid="true"', bad.text)
    assert forge.repositories[PROJECT].hooks == {} and env.api("GET", f"/workspaces/{env.workspace_id}").json()[
        "data"]["attributes"]["vcs-repo"] is None  # fmt: skip
    done = client.post(PAGE, data={**form, "csrf_token": csrf_of(page.text)})
    assert done.status_code == 303 and done.headers["location"].endswith("?saved=1")
    attributes = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["attributes"]
    assert attributes["vcs-repo"]["identifier"] == PROJECT and attributes["vcs-repo"]["tags-regex"] == r"^v\d+$"
    assert attributes["working-directory"] == "envs/prod"
    assert attributes["trigger-patterns"] == ["/modules/**/*.tf", "envs/prod/*.tf"]
    assert len(forge.repositories[PROJECT].hooks) == 1
    shown = client.get(done.headers["location"])
    assert "Repository connected" in shown.text and "Connected repository" in shown.text and PROJECT in shown.text
    assert "/modules/**/*.tf\nenvs/prod/*.tf</textarea>" in shown.text and _csp_clean(shown.text)
    settings = client.get("/app/acme/workspaces/app/settings")
    assert f"Connected to <strong>{PROJECT}</strong>" in settings.text
    gone = client.post(f"{PAGE}/disconnect", data={"csrf_token": csrf_of(shown.text)})
    assert gone.status_code == 303 and forge.repositories[PROJECT].hooks == {}
    after = client.get(gone.headers["location"])
    assert "Repository disconnected" in after.text and "Connected repository" not in after.text
    assert env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["attributes"]["vcs-repo"] is None
