"""terraform follows a plan's `log-read-url` to another origin (`TERRACE_LOG_READ_URL`; on AWS the logs function's
own URL): an absolute URL on a host other than the API's, whose query it replaces with `limit`/`offset` and which it
reads without the API token. Here the other origin is the same server under another name (127.0.0.1, where the
API is localhost): only a URL followed as given reaches it."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from e2e_runs import RUN_TIMEOUT_S, remote_dir, remote_workspace, runs

pytestmark = pytest.mark.e2e


def test_terraform_reads_the_plan_log_at_the_log_read_origin(
    run_local_stack, run_stack, run_api, run_terraform, unique, monkeypatch
):
    container = run_local_stack.container
    api_url = urlsplit(run_stack.url)
    assert api_url.hostname == "localhost"
    origin = f"https://127.0.0.1:{api_url.port}"
    monkeypatch.setattr(container, "settings", container.settings.replace(log_read_url=origin))
    name = unique("logorigin")
    ws_id = remote_workspace(run_api, name)
    tf = remote_dir(run_stack, run_terraform, name, 'resource "null_resource" "a" {}\n')

    result = tf.run("plan", "-no-color", timeout=RUN_TIMEOUT_S)

    assert "null_resource.a will be created" in result.output  # streamed through the log-read URL
    (only,) = runs(run_api, ws_id)
    plan_id = only["relationships"]["plan"]["data"]["id"]
    plan = run_api.request("GET", f"/api/v2/plans/{plan_id}").json()["data"]["attributes"]
    assert plan["log-read-url"].startswith(origin + "/api/v2/logs/plan-")
