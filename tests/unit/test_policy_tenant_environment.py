"""A policy is tenant-supplied code: whoever owns an organization uploads one, runs a plan and reads the messages
back. Nothing of the server's environment reaches them (`adapters/tenant_process.py`)."""

from __future__ import annotations

import json

import pytest
from policy_helpers import create_policy, create_set, plan_run
from run_helpers import make_run_env

SECRETS = {"TERRACE_URL_SIGNING_SECRET": "signing-secret-0f3a9c", "AWS_SECRET_ACCESS_KEY": "role-secret-77b2e1"}
PEEK = """package terraform.policies.peek
import rego.v1

deny contains sprintf("env %s=%s", [name, value]) if { some name, value in opa.runtime().env }
deny contains sprintf("runtime %v", [opa.runtime()])
"""


def test_a_policy_reading_opa_runtime_sees_no_server_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    env = make_run_env()  # alice, the owner of the organization acme
    create_set(env, "peek", policies=(create_policy(env, "peek", "advisory", PEEK),), workspaces=(env.workspace_id,))
    run = plan_run(env, "null_resource")
    [stage] = env.api("GET", f"/runs/{run['id']}/task-stages").json()["data"]
    [evaluation] = env.api("GET", f"/task-stages/{stage['id']}/policy-evaluations").json()["data"]
    outcomes = env.api("GET", f"/policy-evaluations/{evaluation['id']}/policy-set-outcomes")
    assert outcomes.status_code == 200
    assert not [value for value in SECRETS.values() if value in outcomes.text]
    [policy] = outcomes.json()["data"][0]["attributes"]["outcomes"]
    [messages] = [o["result"] for o in policy["output"]]
    assert [m for m in messages if m.startswith("env ")] == []
    [runtime] = [json.loads(m.removeprefix("runtime ")) for m in messages if m.startswith("runtime ")]  # JSON here
    assert runtime["env"] == {} and runtime["version"]
    [check] = env.api("GET", f"/runs/{run['id']}/policy-checks").json()["data"]
    output = env.api("GET", f"/policy-checks/{check['id']}/output")
    assert output.status_code == 200 and "runtime" in output.text
    assert not [value for value in SECRETS.values() if value in output.text]
