"""Run pages of the web UI: list, queue a plan, the run page (timeline, plan summary, live logs) and actions."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from run_helpers import RunEnv, make_run_env
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app
from terrace.web.ui.ansi import ansi_to_html
from ui_helpers import sign_in

BASE = "/app/acme/workspaces/app"


@pytest.fixture
def env() -> RunEnv:
    return make_run_env()


def ui(env: RunEnv, token: str | None = None) -> TestClient:
    client = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    raw = token or env.headers["Authorization"].removeprefix("Bearer ")
    assert sign_in(client, raw).status_code == 303
    return client


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match
    return match.group(1)


def claim_next(env: RunEnv) -> dict[str, Any]:
    return env.claim("r1")


def finish(env: RunEnv, spec: dict[str, Any], **extra: Any) -> None:
    body = {"runner_id": "r1", "status": "finished", "has_changes": True, **extra}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=body).status_code == 200


def put_log(env: RunEnv, spec: dict[str, Any], offset: int, data: bytes) -> None:
    assert env.runner("PUT", f"/jobs/{spec['job_id']}/logs?offset={offset}", content=data).status_code == 204


def test_ansi_colours_become_spans_and_text_is_escaped() -> None:
    html = str(ansi_to_html("\x1b[1m\x1b[32m+ create\x1b[0m <script>&\x1b]0;title\x07 done\x1b[2K\r\n"))
    assert '<span class="ansi-bold ansi-fg-2">+ create</span>' in html
    assert "&lt;script&gt;&amp;" in html and "<script>" not in html and "title" not in html
    assert "\x1b" not in html and html.endswith(" done\n")
    assert str(ansi_to_html("\x1b[38;5;196mred\x1b[39m plain")) == "red plain"


def test_runs_list_is_empty_then_queue_plan_needs_a_configuration(env: RunEnv) -> None:
    client = ui(env)
    page = client.get(f"{BASE}/runs")
    assert page.status_code == 200 and "No runs yet" in page.text
    token = csrf_of(page.text)
    assert client.post(f"{BASE}/runs", data={}).status_code == 403
    refused = client.post(f"{BASE}/runs", data={"csrf_token": token})
    assert refused.status_code == 422 and 'role="alert"' in refused.text and "configuration" in refused.text
    assert env.container.run_store.list_for_workspace(env.workspace_id) == []


def test_queue_plan_uses_the_latest_configuration_and_shows_the_run(env: RunEnv) -> None:
    env.upload_config()
    latest = env.upload_config()
    client = ui(env)
    token = csrf_of(client.get(f"{BASE}/runs").text)
    r = client.post(f"{BASE}/runs", data={"csrf_token": token, "message": "from the browser"})
    assert r.status_code == 303
    run_id = r.headers["location"].rsplit("/", 1)[1]
    run = env.container.run_store.load(run_id)
    assert run.configuration_version_id == latest and run.message == "from the browser"
    page = client.get(r.headers["location"])
    assert page.status_code == 200 and "from the browser" in page.text and "Plan queued" in page.text
    assert 'hx-trigger="every 2s"' in page.text  # not final: the header polls
    listing = client.get(f"{BASE}/runs").text
    assert run_id in listing and "No runs yet" not in listing

    # the link the `cloud` block prints (HCP Terraform's form, without /workspaces/) leads to the run page
    link = client.get(f"/app/acme/app/runs/{run_id}")
    assert link.status_code == 307 and link.headers["location"] == r.headers["location"]


def test_run_page_logs_tail_by_offset_with_whole_lines(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    client = ui(env)
    spec = claim_next(env)
    put_log(env, spec, 0, b"\x1b[1mInitializing\x1b[0m <b>\nhalf a li")
    page = client.get(f"{BASE}/runs/{run['id']}")
    assert '<span class="ansi-bold">Initializing</span> &lt;b&gt;' in page.text and "half a li" not in page.text
    poll = re.search(r'hx-get="([^"]+/logs/plan\?offset=(\d+))"', page.text)
    assert poll and int(poll.group(2)) == len(b"\x02\x1b[1mInitializing\x1b[0m <b>\n")
    put_log(env, spec, len(b"\x1b[1mInitializing\x1b[0m <b>\nhalf a li"), b"ne\nPlan: 1 to add\n")
    more = client.get(poll.group(1))
    assert more.status_code == 200 and more.text.startswith("half a line\nPlan: 1 to add\n")
    assert "Initializing" not in more.text and "logs/plan?offset=" in more.text
    finish(env, spec)
    nxt = re.search(r'hx-get="([^"]+)"', more.text)
    assert nxt
    last = client.get(nxt.group(1))
    assert last.status_code == 200 and "hx-get" not in last.text  # the phase is final: polling stops


def test_plan_summary_and_actions_follow_the_run(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    client = ui(env)
    page = client.get(f"{BASE}/runs/{run['id']}").text
    assert "Cancel run" in page and "Confirm &amp; apply" not in page and "Discard" not in page  # plan queued
    spec = claim_next(env)
    plan = {
        "resource_changes": [
            {"address": "null_resource.a", "change": {"actions": ["create"]}},
            {"address": "null_resource.b", "change": {"actions": ["delete", "create"]}},
            {"address": "null_resource.c", "change": {"actions": ["no-op"]}},
            {"address": "null_resource.d", "change": {"actions": ["delete"]}},
            {
                "address": "aws_instance.web",
                "type": "aws_instance",
                "provider_name": "registry.terraform.io/hashicorp/aws",
                "change": {"actions": ["create"], "before": None, "after": {"instance_type": "t3.micro"}},
            },
        ]
    }
    env.blobs.put(spec["plan_json_upload_url"].split("memory://blobs/")[1].split("?")[0], json.dumps(plan).encode())
    finish(env, spec, resource_additions=1, resource_destructions=1)
    page = client.get(f"{BASE}/runs/{run['id']}").text
    assert "Confirm &amp; apply" in page and "Discard" in page and "Cancel run" not in page
    assert re.search(r'class="change-create">.*\+.*null_resource.a', page)
    assert re.search(r'class="change-replace">.*−/\+.*null_resource.b', page)
    assert re.search(r'class="change-delete">.*−.*null_resource.d', page) and "null_resource.c" not in page
    assert "Plan queued" in page and "Planned" in page and "Cost estimated" in page  # the timeline
    assert "1 of 5 resources estimated: $7.59/month (+$7.59 from $0.00)" in page
    token = csrf_of(page)
    assert client.post(f"{BASE}/runs/{run['id']}/actions/apply", data={}).status_code == 403
    assert env.container.run_store.load(run["id"]).status == "cost_estimated"
    r = client.post(f"{BASE}/runs/{run['id']}/actions/apply", data={"csrf_token": token})
    assert r.status_code == 303 and env.container.run_store.load(run["id"]).status == "apply_queued"
    live = client.get(f"{BASE}/runs/{run['id']}/live").text
    assert "Confirm &amp; apply" not in live and "Cancel run" in live and "hx-trigger" in live
    again = client.post(f"{BASE}/runs/{run['id']}/actions/apply", data={"csrf_token": token})
    assert again.status_code == 409 and 'role="alert"' in again.text


def test_discard_and_final_runs_stop_polling(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    client = ui(env)
    finish(env, claim_next(env))
    token = csrf_of(client.get(f"{BASE}/runs/{run['id']}").text)
    assert client.post(f"{BASE}/runs/{run['id']}/actions/discard", data={"csrf_token": token}).status_code == 303
    page = client.get(f"{BASE}/runs/{run['id']}").text
    assert "discarded" in page and "hx-trigger" not in page and "The apply will not run: the run was discarded." in page
    for label in ("Confirm &amp; apply", "Discard</button>", "Cancel run"):
        assert label not in page


def test_actions_hidden_for_a_plan_only_run(env: RunEnv) -> None:
    run = env.create_run(env.upload_config(), **{"plan-only": True})
    finish(env, claim_next(env), resource_additions=2)
    page = ui(env).get(f"{BASE}/runs/{run['id']}").text
    # a speculative plan with changes reads as what it planned, never "No changes" (web/ui/run_labels.py)
    assert 'id="run-status" data-status="planned_and_finished">Planned (2 to add)</span>' in page
    assert "No changes" not in page and "Confirm &amp; apply" not in page and "Discard" not in page


def test_another_organizations_user_gets_404_for_runs(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    mallory = env.container.accounts.create_user("mallory")
    token = env.container.accounts.issue_token(PrincipalKind.USER, mallory.id).secret
    client = ui(env, token)
    for path in ("/runs", f"/runs/{run['id']}", f"/runs/{run['id']}/live", f"/runs/{run['id']}/logs/plan"):
        r = client.get(BASE + path)
        assert r.status_code == 404 and "text/html" in r.headers["content-type"], path
    token_field = csrf_of(client.get("/app").text)
    r = client.post(f"{BASE}/runs/{run['id']}/actions/discard", data={"csrf_token": token_field})
    assert r.status_code == 404 and env.container.run_store.load(run["id"]).status == "plan_queued"


def test_run_of_another_workspace_is_404_under_this_one(env: RunEnv) -> None:
    other = env.api(
        "POST", "/organizations/acme/workspaces", {"data": {"type": "workspaces", "attributes": {"name": "b"}}}
    ).json()["data"]["id"]
    run = env.create_run(env.upload_config(workspace_id=other), workspace_id=other)
    assert ui(env).get(f"{BASE}/runs/{run['id']}").status_code == 404


def test_cloudwatch_links_only_on_aws() -> None:
    from terrace.web.ui.cloudwatch import insights_url, log_events_url

    url = insights_url("eu-west-1", "/terrace/runner", 'fields line | filter job_id = "plan-abc"')
    assert url.startswith(
        "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logsV2:logs-insights"
    )
    assert "$3FqueryDetail$3D~(" in url and "plan-abc" in url and "*2Fterrace*2Frunner" in url
    assert " " not in url and '"' not in url
    events = log_events_url("eu-west-1", "/terrace/runner", '{ $.job_id = "plan-abc" }')
    assert "log-group/$252Fterrace$252Frunner/log-events$3FfilterPattern$3D" in events and " " not in events

    aws = make_run_env(runner_log_group="/terrace/runner", region="eu-west-1")
    run = aws.create_run(aws.upload_config())
    spec = claim_next(aws)
    page = ui(aws).get(f"{BASE}/runs/{run['id']}").text
    assert "Logs Insights query for this job" in page and "Runner log lines in CloudWatch" in page
    assert page.count("Logs Insights query for this job") == 1  # the apply has not started
    assert spec["job_id"] in page.replace("%22", '"')
    local = make_run_env()  # local mode: no runner log group, no links
    local_run = local.create_run(local.upload_config())
    claim_next(local)
    assert "Logs Insights" not in ui(local).get(f"{BASE}/runs/{local_run['id']}").text


def test_workspaces_list_shows_each_latest_run_with_a_fixed_number_of_reads(env: RunEnv, monkeypatch: Any) -> None:
    run = env.create_run(env.upload_config())
    client = ui(env)
    page = client.get("/app/acme/workspaces").text
    assert f'href="{BASE}/runs/{run["id"]}"' in page and "Plan queued" in page  # its plain label
    table = env.container.table
    calls: list[str] = []
    for method in ("get", "query", "batch_get"):
        original = getattr(table, method)
        monkeypatch.setattr(table, method, lambda *a, _o=original, _m=method, **k: (calls.append(_m), _o(*a, **k))[1])

    def reads_for_the_page() -> int:
        env.container.organizations.forget("acme")  # the same start each time, whatever its 2 s cache holds
        calls.clear()
        assert client.get("/app/acme/workspaces").status_code == 200
        return len(calls)

    with_one = reads_for_the_page()
    for index in range(4):
        body = {"data": {"type": "workspaces", "attributes": {"name": f"more-{index}"}}}
        ws_id = env.api("POST", "/organizations/acme/workspaces", body).json()["data"]["id"]
        env.create_run(env.upload_config(workspace_id=ws_id), workspace_id=ws_id)
    assert reads_for_the_page() == with_one  # no per-row reads


def test_confirm_and_discard_take_a_comment_the_run_page_shows(env: RunEnv) -> None:
    """As the API's actions do: the comment is checked before the action, and kept as the run's comment."""
    client = ui(env)
    discarded = env.create_run(env.upload_config())
    finish(env, claim_next(env))
    page = client.get(f"{BASE}/runs/{discarded['id']}").text
    assert (
        'id="run-action-discard"' in page
        and page.count('<textarea id="run-comment"') == 1
        and 'id="run-comments"' not in page
    )
    token = csrf_of(page)
    data = {"csrf_token": token, "comment": "not today"}
    assert client.post(f"{BASE}/runs/{discarded['id']}/actions/discard", data=data).status_code == 303
    assert env.container.run_store.load(discarded["id"]).status == "discarded"
    assert "not today" in client.get(f"{BASE}/runs/{discarded['id']}").text

    applied = env.create_run(env.upload_config())
    finish(env, claim_next(env))
    too_long = {"csrf_token": token, "comment": "x" * 5000}
    refused = client.post(f"{BASE}/runs/{applied['id']}/actions/apply", data=too_long)
    assert refused.status_code == 422 and "longer than" in refused.text
    assert env.container.run_store.load(applied["id"]).status in ("planned", "cost_estimated")  # not applied
    data = {"csrf_token": token, "comment": "ship it <b>now</b>"}
    assert client.post(f"{BASE}/runs/{applied['id']}/actions/apply", data=data).status_code == 303
    assert env.container.run_store.load(applied["id"]).status == "apply_queued"
    comments = env.api("GET", f"/runs/{applied['id']}/comments").json()["data"]
    assert [c["attributes"]["body"] for c in comments] == ["ship it <b>now</b>"]
    page = client.get(f"{BASE}/runs/{applied['id']}").text
    assert 'id="run-comments"' in page and "ship it &lt;b&gt;now&lt;/b&gt;" in page


def test_the_new_run_form_queues_each_kind_with_targets_and_replacements(env: RunEnv) -> None:
    from test_run_option_permissions import _planner

    env.upload_config()
    client = ui(env)
    page = client.get(f"{BASE}/runs").text
    for kind in ("plan-and-apply", "plan-only", "refresh-only", "destroy"):
        assert f'id="kind-{kind}" name="kind" value="{kind}"' in page
    token = csrf_of(page)
    form = {"csrf_token": token, "kind": "plan-only", "message": "just looking",
            "targets": "null_resource.a\nmodule.b.null_resource.c", "replace": "null_resource.a"}  # fmt: skip
    sent = client.post(f"{BASE}/runs", data=form)
    assert sent.status_code == 303, sent.text
    run = env.container.run_store.load(sent.headers["location"].rsplit("/", 1)[1])
    assert (run.plan_only, run.refresh_only, run.is_destroy, run.message) == (True, False, False, "just looking")
    assert run.target_addrs == ["null_resource.a", "module.b.null_resource.c"] and run.replace_addrs == [
        "null_resource.a"
    ]
    destroy = client.post(f"{BASE}/runs", data={"csrf_token": token, "kind": "destroy"})
    assert env.container.run_store.load(destroy.headers["location"].rsplit("/", 1)[1]).is_destroy
    refresh = client.post(f"{BASE}/runs", data={"csrf_token": token, "kind": "refresh-only"})
    assert env.container.run_store.load(refresh.headers["location"].rsplit("/", 1)[1]).refresh_only

    bad = client.post(f"{BASE}/runs", data={"csrf_token": token, "kind": "yolo", "message": "kept"})
    assert bad.status_code == 422 and "run type must be one of" in bad.text and 'value="kept"' in bad.text
    many = client.post(f"{BASE}/runs", data={"csrf_token": token, "targets": "\n".join(f"r.x{i}" for i in range(1001))})
    assert many.status_code == 422 and "target-addrs must be a list" in many.text
    no_destroy = {"data": {"type": "workspaces", "attributes": {"allow-destroy-plan": False}}}
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", no_destroy).status_code == 200
    assert 'value="destroy"' not in client.get(f"{BASE}/runs").text
    refused = client.post(f"{BASE}/runs", data={"csrf_token": token, "kind": "destroy"})
    assert refused.status_code == 422 and "does not allow destroy plans" in refused.text

    planner = ui(env, _planner(env))  # plan access: may queue, someone else confirms
    shown = planner.get(f"{BASE}/runs").text
    assert 'id="apply-by-others"' in shown and 'name="kind"' in shown
