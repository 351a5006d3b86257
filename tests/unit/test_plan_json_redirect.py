"""json-output-redacted of a plan JSON above TERRACE_PLAN_JSON_REDIRECT_BYTES: redacted once when the plan finishes,
stored beside the JSON, answered with a 307 to it (a Lambda answer holds 6 MB); a small one is answered inline.
(tests/e2e/test_large_plan_json.py follows the 307 with httpx on the embedded server after a real terraform plan.)"""

from __future__ import annotations

import json
from typing import Any

from run_helpers import RunEnv, make_run_env

PLAN = {
    "resource_changes": [
        {
            "address": "x.a",
            "change": {
                "before": None,
                "after": {"password": "hunter2", "name": "a" * 200},
                "before_sensitive": False,
                "after_sensitive": {"password": True},
            },
        }
    ]
}


def finished_plan(env: RunEnv) -> tuple[str, str]:
    run = env.create_run(env.upload_config())
    spec = env.claim("r1")
    key = spec["plan_json_upload_url"].split("memory://blobs/")[1].split("?")[0]
    env.blobs.put(key, json.dumps(PLAN).encode())
    body: dict[str, Any] = {"runner_id": "r1", "status": "finished", "has_changes": True}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=body).status_code == 200
    return str(run["relationships"]["plan"]["data"]["id"]), key


def test_a_large_plans_redacted_json_is_a_307_to_its_stored_redacted_copy() -> None:
    env = make_run_env(plan_json_redirect_bytes=len(json.dumps(PLAN)) - 1)
    plan_id, key = finished_plan(env)
    answer = env.api("GET", f"/plans/{plan_id}/json-output-redacted", follow_redirects=False)
    assert answer.status_code == 307, answer.text
    copy = key.removesuffix(".json") + ".redacted.json"
    assert answer.headers["location"].startswith(f"memory://blobs/{copy}?op=get")
    stored = json.loads(env.blobs.get(copy))
    assert stored["resource_changes"][0]["change"]["after"] == {"password": None, "name": "a" * 200}
    assert b"hunter2" in env.blobs.get(key) and b"hunter2" not in env.blobs.get(copy)


def test_a_small_plans_redacted_json_is_answered_inline_and_no_copy_is_stored() -> None:
    env = make_run_env(plan_json_redirect_bytes=len(json.dumps(PLAN)))
    plan_id, key = finished_plan(env)
    answer = env.api("GET", f"/plans/{plan_id}/json-output-redacted", follow_redirects=False)
    assert answer.status_code == 200
    assert answer.json()["resource_changes"][0]["change"]["after"]["password"] is None
    assert env.blobs.head(key.removesuffix(".json") + ".redacted.json") is None
