"""Day-one pages of the web UI (issue 45, second step): no "Queue plan" for a workspace without a configuration,
organization settings that only offer what works, one comment box on a run, moving a workspace to another
project, a notification's Verify saying what came back."""

from __future__ import annotations

import re

from notification_helpers import create, notification_env, outbound
from run_helpers import RunEnv, join, make_run_env, tarball
from state_helpers import make_env as make_state_env
from state_helpers import other_user
from terrace.adapters.outbound import OutboundResponse
from terrace.domain.principal import Principal, PrincipalKind
from test_web_ui import signed_in
from test_web_ui_runs import claim_next, csrf_of, finish, put_log, ui

BASE = "/app/acme/workspaces/app"
SETTINGS = "/app/acme/workspaces/prod/settings"
TOKENS = "/app/acme/settings/tokens"


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


def test_one_comment_box_on_a_run_goes_with_an_action_or_alone() -> None:
    env = make_run_env()
    client = ui(env)
    run = env.create_run(env.upload_config())
    finish(env, claim_next(env))
    page = client.get(f"{BASE}/runs/{run['id']}").text
    assert page.count('name="comment"') == 1 and page.count("<textarea") == 1  # not one box per action
    assert 'formaction="/app/acme/workspaces/app/runs/' + run["id"] + '/actions/apply"' in page
    assert 'id="run-action-discard" data-confirm=' in page
    token = csrf_of(page)
    blank = client.post(f"{BASE}/runs/{run['id']}/comments", data={"csrf_token": token, "comment": "  "})
    assert blank.status_code == 422 and 'role="alert"' in blank.text and "needs some text" in blank.text
    long = client.post(f"{BASE}/runs/{run['id']}/comments", data={"csrf_token": token, "comment": "x" * 5000})
    assert long.status_code == 422 and "longer than" in long.text
    added = client.post(f"{BASE}/runs/{run['id']}/comments", data={"csrf_token": token, "comment": "looks <i>fine</i>"})
    assert added.status_code == 303 and added.headers["location"].endswith("#run-comments")
    assert env.container.run_store.load(run["id"]).status in ("planned", "cost_estimated")  # no action taken
    data = {"csrf_token": token, "comment": "ship it"}
    assert client.post(f"{BASE}/runs/{run['id']}/actions/apply", data=data).status_code == 303
    comments = env.api("GET", f"/runs/{run['id']}/comments").json()["data"]
    assert [c["attributes"]["body"] for c in comments] == ["looks <i>fine</i>", "ship it"]
    assert "looks &lt;i&gt;fine&lt;/i&gt;" in client.get(f"{BASE}/runs/{run['id']}").text


def test_a_workspace_moves_to_another_project_from_its_settings() -> None:
    env = make_state_env()
    owner = Principal(PrincipalKind.USER, env.container.accounts.find_user("alice").id, "alice")  # type: ignore[union-attr]
    platform = env.container.projects.create(owner, "acme", {"name": "platform"})
    _, mallory = other_user(env)
    theirs = env.container.projects.create(mallory, "evil", {"name": "theirs"})
    client = signed_in(env)
    page = client.get(SETTINGS).text
    assert 'id="project_id"' in page and ">Default Project (current)</option>" in page and ">platform</option>" in page
    token = csrf_of(page)
    foreign = client.post(f"{SETTINGS}/project", data={"csrf_token": token, "project_id": theirs.id})
    assert foreign.status_code == 422 and 'id="project-error"' in foreign.text  # another organization's: unknown
    assert env.ws().project_id in (None, "")
    moved = client.post(f"{SETTINGS}/project", data={"csrf_token": token, "project_id": platform.id})
    assert moved.status_code == 303 and moved.headers["location"].endswith("?moved=1#workspace-project")
    assert env.ws().project_id == platform.id
    after = client.get(SETTINGS + "?moved=1").text
    assert "Workspace moved." in after and ">platform (current)</option>" in after
    assert ">platform</a>" in client.get("/app/acme/workspaces/prod").text  # the overview names its project


def test_verify_on_the_notifications_page_says_what_the_destination_answered() -> None:
    env = notification_env()
    nc = create(env, token="k")
    client = ui(env)
    page = f"{BASE}/notifications"
    token = csrf_of(client.get(page).text)
    verified = client.post(f"{page}/{nc['id']}/verify", data={"csrf_token": token})
    assert verified.status_code == 303 and verified.headers["location"].endswith(f"&result=ok#{nc['id']}")
    shown = client.get(verified.headers["location"]).text
    assert 'id="verify-result"' in shown and "Verification sent: 200 ok." in shown
    outbound(env).answer = lambda url, data: OutboundResponse(None, error="connection: refused")
    failed = client.post(f"{page}/{nc['id']}/verify", data={"csrf_token": token})
    assert failed.headers["location"].endswith("&result=failed#" + nc["id"])
    shown = client.get(failed.headers["location"]).text
    assert 'role="alert" class="error" id="verify-result">Verification failed: no answer: connection: refused' in shown
    assert 'id="verify-result"' not in client.get(page).text  # said once, after the click

    nobody = create(env, **{"destination-type": "email", "url": None, "name": "mail"})
    unsent = client.post(f"{page}/{nobody['id']}/verify", data={"csrf_token": token})
    assert unsent.headers["location"].endswith("&result=none#" + nobody["id"])
    assert "Nothing was sent: this notification has no recipients." in client.get(unsent.headers["location"]).text


def _grant(env: RunEnv, team: str, project_id: str, access: str, **attributes: object) -> None:
    made = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": team}}})
    body = {"data": {"type": "team-projects", "attributes": {"access": access, **attributes},
                     "relationships": {"team": {"data": {"type": "teams", "id": made.json()["data"]["id"]}},
                                       "project": {"data": {"type": "projects", "id": project_id}}}}}  # fmt: skip
    assert env.api("POST", "/team-projects", body).status_code == 201


def test_a_workspaces_team_access_shows_what_its_project_gives() -> None:
    env = make_run_env()
    [default] = env.api("GET", "/organizations/acme/projects").json()["data"]
    _grant(env, "devs", default["id"], "maintain")
    _grant(env, "auditors", default["id"], "custom", **{"workspace-access": {"runs": "plan"}})
    client = ui(env)
    page = client.get(f"{BASE}/access").text
    assert "From the project Default Project" in page
    table = page[page.index('id="inherited-access"') :]
    assert table.index(">auditors</a>") < table.index(">devs</a>")  # by name
    assert "<td>maintain</td>" in table and "<td>admin</td>" in table and "custom: runs plan" in table

    empty = env.api(
        "POST", "/organizations/acme/projects", {"data": {"type": "projects", "attributes": {"name": "platform"}}}
    )
    moved = {"data": [{"type": "workspaces", "id": env.workspace_id}]}
    assert env.api("POST", f"/projects/{empty.json()['data']['id']}/relationships/workspaces", moved).status_code == 204
    page = client.get(f"{BASE}/access").text
    assert "No team has access through the project" in page and ">devs</a>" not in page.split("From the project")[1]


def test_organization_and_team_tokens_are_created_shown_once_listed_and_revoked() -> None:
    env = make_run_env()
    env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "deployers"}}})
    client = ui(env)
    page = client.get(TOKENS)
    assert page.status_code == 200 and "No organization token." in page.text and "No team tokens." in page.text
    token = csrf_of(page.text)
    made = client.post(f"{TOKENS}/organization", data={"csrf_token": token, "expires_on": "2031-05-04"})
    assert made.status_code == 303 and made.headers["location"] == TOKENS + "#organization-token"
    assert "at-" not in made.headers["location"] and made.headers["cache-control"] == "no-store"
    shown = client.get(TOKENS)
    secret = re.search(r'<code id="new-token">([^<]+)</code>', shown.text)
    assert secret and shown.headers["cache-control"] == "no-store" and 'datetime="2031-05-04T00:00:00' in shown.text
    org_headers = {"Authorization": f"Bearer {secret.group(1)}"}
    assert env.client.get("/api/v2/organizations/acme/teams", headers=org_headers).status_code == 200
    assert 'id="new-token"' not in client.get(TOKENS).text  # shown once

    bad = client.post(f"{TOKENS}/teams", data={"csrf_token": token, "description": "CI", "expires_on": "soon",
                                               "team_id": _team_id(env, "deployers")})  # fmt: skip
    assert bad.status_code == 422 and 'id="team-token-error"' in bad.text and "YYYY-MM-DD" in bad.text
    data = {"csrf_token": token, "description": "CI deploys", "team_id": _team_id(env, "deployers"), "expires_on": ""}
    assert client.post(f"{TOKENS}/teams", data=data).status_code == 303
    listed = client.get(TOKENS).text
    assert re.search(r'<code id="new-token">[^<]+</code>', listed)
    assert ">deployers</a>" in listed and "CI deploys" in listed
    again = client.post(f"{TOKENS}/teams", data=data)  # the same description in the same team
    assert again.status_code == 422 and 'id="team-token-error"' in again.text
    [team_token] = env.api("GET", "/organizations/acme/team-tokens").json()["data"]
    revoked = client.post(f"{TOKENS}/{team_token['id']}/revoke", data={"csrf_token": token})
    assert revoked.status_code == 303 and "No team tokens." in client.get(TOKENS).text
    mine = env.headers["Authorization"].removeprefix("Bearer ")
    own_id = env.container.accounts.authenticate(mine).token_id  # type: ignore[union-attr]
    assert client.post(f"{TOKENS}/{own_id}/revoke", data={"csrf_token": token}).status_code == 404  # not a team's

    assert client.post(f"{TOKENS}/organization/revoke", data={"csrf_token": token}).status_code == 303
    assert env.client.get("/api/v2/organizations/acme/teams", headers=org_headers).status_code == 401
    assert "No organization token." in client.get(TOKENS).text


def _team_id(env: RunEnv, name: str) -> str:
    teams = env.api("GET", "/organizations/acme/teams").json()["data"]
    return str(next(t["id"] for t in teams if t["attributes"]["name"] == name))


def test_a_member_sees_no_token_forms_and_is_refused() -> None:
    env = make_run_env()
    bob = env.container.accounts.create_user("bob", "bob@example.com")
    secret = env.container.accounts.issue_token(PrincipalKind.USER, bob.id).secret
    join(env, secret, "bob")
    member = ui(env, secret)
    page = member.get(TOKENS).text
    assert 'id="owners-only"' in page and "Create team token" not in page and "organization/revoke" not in page
    refused = member.post(f"{TOKENS}/organization", data={"csrf_token": csrf_of(page)})
    assert refused.status_code == 403 and 'id="organization-token-error"' in refused.text
    assert env.api("GET", "/organizations/acme/authentication-token").status_code == 404  # none was made


TYPED_TF = """
variable "tags" {
  type    = map(string)
  default = { env = "dev" }
}
variable "zones" {
  type    = list(string)
  default = ["a", "b"]
}
variable "label" {
  type    = string
  default = ""
}
"""
README = """# VPC
A *network*. <script>alert(1)</script> <img src=x onerror=alert(1)>
[docs](https://example.com/vpc) [bad](javascript:alert(1)) ![diagram](https://elsewhere.example/d.png)
"""


def test_a_registry_modules_inputs_have_their_types_and_defaults_and_its_readme_is_rendered_safely() -> None:
    from test_registry_modules import _module, _publish

    env = make_run_env()
    _module(env)
    _publish(env, "1.0.0", tarball({"main.tf": TYPED_TF, "README.md": README}))
    page = ui(env).get("/app/acme/registry/vpc/aws").text
    inputs = page[page.index('id="inputs"') : page.index("</table>", page.index('id="inputs"'))]
    assert "<code>map(string)</code>" in inputs and "<code>list(string)</code>" in inputs and "${" not in inputs
    assert "{&#34;env&#34;: &#34;dev&#34;}" in inputs and "[&#34;a&#34;, &#34;b&#34;]" in inputs
    assert "<code>&#34;&#34;</code>" in inputs  # an empty string default is shown, quoted
    readme = page[page.index('id="readme"') :]
    assert "<h3>VPC</h3>" in readme and "<em>network</em>" in readme
    assert '<a href="https://example.com/vpc" rel="nofollow noopener noreferrer">docs</a>' in readme
    assert "<script>" not in readme and "<img" not in readme and 'href="javascript' not in readme
    assert "&lt;script&gt;" in readme and "diagram" in readme  # raw HTML as text; an image as its alt text


def test_a_variable_sets_variables_are_edited_and_a_sensitive_value_is_never_shown() -> None:
    from test_varsets_api import _set, _var

    env = make_run_env()
    vs = _set(env, "creds")
    plain = _var(env, vs["id"], "region", "eu-west-1")["data"]
    secret = _var(env, vs["id"], "password", "hunter2", sensitive=True)["data"]
    client = ui(env)
    base = f"/app/acme/varsets/{vs['id']}"
    assert f'href="{base}/variables/{plain["id"]}" aria-label="Edit region"' in client.get(base).text
    page = client.get(f"{base}/variables/{plain['id']}").text
    assert "eu-west-1</textarea>" in page
    token = csrf_of(page)
    form = {"csrf_token": token, "key": "region", "value": "us-east-1", "category": "env", "description": "where"}
    assert client.post(f"{base}/variables/{plain['id']}", data=form).status_code == 303
    [changed] = [v for v in env.api("GET", f"/varsets/{vs['id']}/relationships/vars").json()["data"]
                 if v["id"] == plain["id"]]  # fmt: skip
    assert (changed["attributes"]["value"], changed["attributes"]["category"]) == ("us-east-1", "env")

    edit = client.get(f"{base}/variables/{secret['id']}").text
    assert "hunter2" not in edit and 'type="password"' in edit
    kept = {"csrf_token": token, "key": "db_password", "value": "", "category": "terraform"}
    assert client.post(f"{base}/variables/{secret['id']}", data=kept).status_code == 303  # blank keeps the value
    stored = env.container.set_variables.of(env.container.varsets.get(_owner(env), vs["id"]))
    [renamed] = [v for v in stored if v.id == secret["id"]]
    assert renamed.key == "db_password" and renamed.sensitive
    clash = client.post(f"{base}/variables/{secret['id']}", data={**kept, "key": "region", "category": "env",
                                                                    "value": "never-echoed"})  # fmt: skip
    assert clash.status_code == 422 and 'role="alert"' in clash.text and "never-echoed" not in clash.text


def _owner(env: RunEnv) -> Principal:
    return env.container.accounts.authenticate(env.headers["Authorization"].removeprefix("Bearer "))  # type: ignore[return-value]


def test_an_errored_runs_message_is_its_first_line_and_its_error_blocks_come_from_the_reported_tail() -> None:
    env = make_run_env()
    run = env.create_run(env.upload_config())
    spec = claim_next(env)
    put_log(env, spec, 0, b"".join(b"noise %d\n" % i for i in range(20)))  # the page's log holds no Error:
    message = ("terraform plan failed (exit 1)\n\x1b[31m│\x1b[0m noise 19\n"
               "\x1b[31m╷\x1b[0m\n\x1b[31m│\x1b[0m \x1b[1mError: \x1b[0mUnsupported block type\n│ \n"
               '│   on main.tf line 2:\n│    2: bogus "x" {}\n╵')  # fmt: skip
    # as the runner's `_errored` reports it: its message, then the log's last lines (terminal codes and all)
    finish(env, spec, status="errored", has_changes=False, error_message=message)
    page = ui(env).get(f"{BASE}/runs/{run['id']}").text
    assert '<p class="error" role="alert" id="run-error-message">terraform plan failed (exit 1)</p>' in page
    last = page[page.index('class="run-error-tail"') :]
    assert "noise 19\n" in last and "\x1b" not in last  # the lines kept apart, terminal codes removed
    summary = page[page.index('id="run-errors-heading"') :]
    assert "Error: Unsupported block type\n\n  on main.tf line 2:\n   2: bogus &#34;x&#34; {}</pre>" in summary
