"""Every create form of the UI shows its `curl` equivalent one click away, and the command works: each one shown
here is read from the rendered page, its placeholders filled in, and sent to the API as shown."""

from __future__ import annotations

import html
import json
import re
import shlex
from typing import Any

import pytest
from state_helpers import Env, make_env
from test_web_ui import signed_in

CURL = re.compile(
    r'<details class="curl"><summary>API equivalent of (.*?) \(curl\)</summary>\s*<pre><code>(.*?)</code>', re.S
)


@pytest.fixture
def env() -> Env:
    return make_env()


def shown_commands(env: Env, page: str) -> dict[str, str]:
    response = signed_in(env).get(page)
    assert response.status_code == 200, page
    return {html.unescape(what): html.unescape(command) for what, command in CURL.findall(response.text)}


def send(env: Env, command: str, fill: dict[str, str]) -> Any:
    """Run the command as curl would: its method, URL and body, with the placeholders replaced."""
    for placeholder, value in fill.items():
        command = command.replace(placeholder, value)
    words = shlex.split(command.replace("\\\n", " "))
    assert words[0] == "curl" and "Bearer $TOKEN" in command
    method = words[words.index("-X") + 1] if "-X" in words else "GET"
    url = next(w for w in words if w.startswith("https://"))
    body = json.loads(words[words.index("-d") + 1]) if "-d" in words else None
    path = "/" + url.split("://", 1)[1].split("/", 1)[1]
    return env.client.request(method, path, headers=env.auth, json=body)


@pytest.mark.parametrize(
    ("page", "what", "fill"),
    [
        ("/app/acme/workspaces/new", "creating a workspace", {"NAME": "made-by-curl"}),
        ("/app/acme/workspaces/prod/variables", "adding a variable", {"KEY": "region", "VALUE": "eu-west-1"}),
        ("/app/account/tokens", "creating a token", {"DESCRIPTION": "ci"}),
        ("/app/acme/varsets", "creating a variable set", {"NAME": "shared"}),
        ("/app/acme/policies", "creating a policy (then PUT its Rego to /policies/ID/upload)", {"NAME": "no_null"}),
    ],
)
def test_a_forms_curl_equivalent_does_what_the_form_does(env: Env, page: str, what: str, fill: dict[str, str]) -> None:
    commands = shown_commands(env, page)
    assert what in commands, sorted(commands)
    response = send(env, commands[what], fill)
    assert response.status_code == 201, response.text


def test_the_policy_set_command_names_the_policy_it_takes(env: Env) -> None:
    create = shown_commands(env, "/app/acme/policies")["creating a policy (then PUT its Rego to /policies/ID/upload)"]
    policy = send(env, create, {"NAME": "no_null"}).json()["data"]
    command = shown_commands(env, "/app/acme/policies")["creating a policy set"]
    made = send(env, command, {"NAME": "guard", "POLICY_ID": policy["id"]})
    assert made.status_code == 201, made.text
    assert made.json()["data"]["relationships"]["policies"]["data"][0]["id"] == policy["id"]


def test_a_run_trigger_command_adds_the_source_it_is_given(env: Env) -> None:
    source = env.container.workspaces.create(env.principal, "acme", {"name": "network"})
    command = shown_commands(env, "/app/acme/workspaces/prod/settings/run-triggers")["adding a source"]
    assert f"/api/v2/workspaces/{env.ws_id}/run-triggers" in command
    made = send(env, command, {"SOURCE_WORKSPACE_ID": source.id})
    assert made.status_code == 201, made.text
    notifications = shown_commands(env, "/app/acme/workspaces/prod/notifications")["adding a notification"]
    assert f"/api/v2/workspaces/{env.ws_id}/notification-configurations" in notifications
