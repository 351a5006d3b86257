"""The policy engine (rego-cpp through `regopy`, in a bounded child process): current Rego compiles and decides,
a syntax error is the engine's message, and a policy that loops or explodes ends its own evaluation."""

from __future__ import annotations

import platform

import pytest
import regopy
from terrace.adapters.rego_policy_engine import RegoPolicyEngine

DENY_NULL = """package terraform.policies.no_null
import rego.v1

deny contains msg if {
    some rc in input.plan.resource_changes
    rc.type == "null_resource"
    "create" in rc.change.actions
    msg := sprintf("%s may not be created (run %s)", [rc.address, input.run.id])
}
"""
LOOP = """package terraform.policies.slow
import rego.v1

deny contains "never" if {
    some i in numbers.range(1, 100000)
    some j in numbers.range(1, 100000)
    i == j + 100000000
}
"""
SLOW = "data.terraform.policies.slow.deny"
EXPLODE = """package terraform.policies.big
import rego.v1

deny contains "never" if { count([n | some n in numbers.range(1, 200000000)]) < 0 }
"""


def plan(*types: str) -> dict:
    changes = [{"address": f"{t}.x{i}", "type": t, "change": {"actions": ["create"]}} for i, t in enumerate(types)]
    return {"plan": {"resource_changes": changes}, "run": {"id": "run-abc"}}


@pytest.fixture(scope="module")
def engine() -> RegoPolicyEngine:
    return RegoPolicyEngine(timeout_s=20, cpu_s=20, memory_bytes=256 * 1024 * 1024)


def test_the_engine_is_the_pinned_regopy_for_this_machine() -> None:
    assert regopy.__version__ == "1.5.2"
    assert platform.machine() in ("x86_64", "aarch64")  # the wheels pinned in pyproject.toml: both


def test_current_rego_denies_with_its_messages(engine: RegoPolicyEngine) -> None:
    query = "data.terraform.policies.no_null.deny"
    answer = engine.evaluate({"no_null.rego": DENY_NULL}, [query], plan("null_resource"))
    assert answer.error is None
    (result,) = answer.results
    assert result.defined and result.value == ["null_resource.x0 may not be created (run run-abc)"]


def test_current_rego_allows_with_an_empty_set(engine: RegoPolicyEngine) -> None:
    answer = engine.evaluate({"no_null.rego": DENY_NULL}, ["data.terraform.policies.no_null.deny"], plan("aws_s3"))
    assert answer.error is None and answer.results[0].value == []


def test_an_unknown_rule_is_undefined_and_data_is_read(engine: RegoPolicyEngine) -> None:
    modules = {"a.rego": "package a\nimport rego.v1\nlimit := data.limits.max\n"}
    answer = engine.evaluate(modules, ["data.a.limit", "data.a.nothing"], {}, {"limits": {"max": 3}})
    assert [(r.defined, r.value) for r in answer.results] == [(True, 3), (False, None)]


def test_a_syntax_error_is_the_engines_message(engine: RegoPolicyEngine) -> None:
    message = engine.check({"bad.rego": "package bad\nimport rego.v1\ndeny contains msg if {\n  msg :=\n}\n"})
    assert message is not None and "bad.rego:4" in message and "Invalid assignment" in message
    assert engine.check({"good.rego": DENY_NULL}) is None
    assert engine.check({"slow.rego": LOOP}) is None  # compiling evaluates nothing


def test_a_package_line_with_a_rule_on_it_reads_as_opa_reads_it(engine: RegoPolicyEngine) -> None:
    """OPA ends a package declaration with its path: go-tfe's policy helper uploads this one line (v1.109's
    `TestPoliciesUpdate`), which rego-cpp alone refuses."""
    for body, value in (("false", {}), ("true", {"not allowed": True})):
        module = {"p.rego": f'package example rule["not allowed"] {{ {body} }}'}
        assert engine.check(module) is None
        assert engine.evaluate(module, ["data.example.rule"], {}).results[0].value == value
    assert engine.check({"p.rego": "package example.a # a comment\nx := 1\n"}) is None


def test_a_policy_that_loops_is_stopped_at_the_time_limit() -> None:
    answer = RegoPolicyEngine(timeout_s=1, cpu_s=30, memory_bytes=1024**3).evaluate({"s.rego": LOOP}, [SLOW], {})
    assert answer.error == "the policy evaluation took longer than 1 s and was stopped"


def test_a_policy_that_loops_is_stopped_at_the_cpu_limit() -> None:
    answer = RegoPolicyEngine(timeout_s=60, cpu_s=1, memory_bytes=1024**3).evaluate({"s.rego": LOOP}, [SLOW], {})
    assert answer.error == "the policy evaluation used more CPU time than allowed and was stopped"


def test_a_policy_that_explodes_is_stopped_at_the_memory_limit(engine: RegoPolicyEngine) -> None:
    answer = engine.evaluate({"b.rego": EXPLODE}, ["data.terraform.policies.big.deny"], {})
    assert answer.error == "the policy evaluation used more than 256 MiB and was stopped"
    # and the engine still serves the next evaluation
    assert engine.check({"good.rego": DENY_NULL}) is None


RUNTIME = """package terraform.policies.peek
import rego.v1

runtime := opa.runtime()
env := opa.runtime().env
deny contains sprintf("%s=%s", [k, v]) if { some k, v in opa.runtime().env }
"""
PEEK = "data.terraform.policies.peek"


def test_a_policy_reads_no_variable_of_the_servers_environment(
    engine: RegoPolicyEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERRACE_URL_SIGNING_SECRET", "the-url-signing-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "the-role-secret")
    answer = engine.evaluate({"peek.rego": RUNTIME}, [f"{PEEK}.runtime", f"{PEEK}.env", f"{PEEK}.deny"], {})
    assert answer.error is None
    runtime, env, deny = answer.results
    assert runtime.defined and runtime.value["env"] == {} and runtime.value["version"]
    assert (env.value, deny.value) == ({}, [])
    assert "secret" not in repr(answer)


def test_a_policy_reaches_no_network(engine: RegoPolicyEngine) -> None:
    """rego-cpp declares these built-ins and does not implement them: a policy compiles, and they are undefined."""
    module = """package net_probe
import rego.v1

http := http.send({"method": "get", "url": "http://169.254.169.254/latest/meta-data/"})
lookup := net.lookup_ip_addr("localhost")
"""
    answer = engine.evaluate({"n.rego": module}, ["data.net_probe.http", "data.net_probe.lookup"], {})
    assert answer.error is None and [r.defined for r in answer.results] == [False, False]
