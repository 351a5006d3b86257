"""A policy is tenant-supplied code: whoever owns an organization uploads one, runs a plan and reads the messages
back. Nothing of the server's environment reaches them (`adapters/tenant_process.py`)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from policy_helpers import create_policy, create_set, plan_run
from run_helpers import make_run_env

SECRETS = {"TERRACE_URL_SIGNING_SECRET": "signing-secret-0f3a9c", "AWS_SECRET_ACCESS_KEY": "role-secret-77b2e1"}
NAMED = """package terraform.policies.named
import rego.v1

names := ["TERRACE_URL_SIGNING_SECRET", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "PATH", "HOME"]
# rego-cpp keeps the quotes of an environment value: trimmed, the message is valid JSON (as an attacker writes it)
deny contains sprintf("env %s=%s", [name, trim(opa.runtime().env[name], `"`)]) if { some name in names }
deny contains sprintf("variables %d", [count(opa.runtime().env)])
"""
WHOLE = """package terraform.policies.whole
import rego.v1

deny contains sprintf("runtime %v", [opa.runtime()])
"""


def _messages(outcome: dict[str, Any], name: str) -> list[str]:
    [policy] = [p for p in outcome["attributes"]["outcomes"] if p["policy_name"] == name]
    assert policy["status"] == "failed", policy  # advisory: its messages are the point
    return [message for output in policy["output"] for message in output["result"]]


def test_a_policy_reading_opa_runtime_sees_no_server_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    env = make_run_env()  # alice, the owner of the organization acme
    policies = (create_policy(env, "named", "advisory", NAMED), create_policy(env, "whole", "advisory", WHOLE))
    create_set(env, "peek", policies=policies, workspaces=(env.workspace_id,))
    run = plan_run(env, "null_resource")
    [stage] = env.api("GET", f"/runs/{run['id']}/task-stages").json()["data"]
    [evaluation] = env.api("GET", f"/task-stages/{stage['id']}/policy-evaluations").json()["data"]
    outcomes = env.api("GET", f"/policy-evaluations/{evaluation['id']}/policy-set-outcomes")
    assert outcomes.status_code == 200
    [outcome] = outcomes.json()["data"]
    assert _messages(outcome, "named") == ["variables 0"]
    [whole] = _messages(outcome, "whole")
    runtime = json.loads(whole.removeprefix("runtime "))
    assert runtime["env"] == {} and runtime["version"]
    assert not [value for value in SECRETS.values() if value in outcomes.text]
    [check] = env.api("GET", f"/runs/{run['id']}/policy-checks").json()["data"]
    output = env.api("GET", f"/policy-checks/{check['id']}/output")
    assert output.status_code == 200 and "variables 0" in output.text
    assert not [value for value in SECRETS.values() if value in output.text]
