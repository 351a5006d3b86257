"""The policy engine port's contract, on both implementations: the engine's child process beside the caller
(`rego_policy_engine.py`: the embedded server, the moto stack) and the policy function (`lambda_policy_engine.py`:
AWS), the latter through boto3's real Lambda client as the composition root builds it, against Lambda's Invoke REST
API (`POST /2015-03-31/functions/{name}/invocations`) served by a local HTTP server that runs the real
`functions/policy/handler.py` in-process (moto cannot run a function's code without Docker).

Rego decides, the engine's messages come back, a policy that loops or explodes ends its own evaluation, an input of
several MB crosses; and on the function's side, whatever goes wrong with the invocation is the evaluation's error."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from terrace.adapters.lambda_policy_engine import LambdaPolicyEngine, serve
from terrace.adapters.policy_engine import EngineResult, PolicyEngine, QueryResult
from terrace.adapters.rego_policy_engine import RegoPolicyEngine
from terrace.config import Settings
from terrace.wiring import aws_adapters

HANDLER = Path(__file__).resolve().parents[2] / "functions" / "policy" / "handler.py"
INVOKE = re.compile(r"^/2015-03-31/functions/([^/]+)/invocations$")
DENY_NULL = """package terraform.policies.no_null
import rego.v1

deny contains msg if {
    some rc in input.plan.resource_changes
    rc.type == "null_resource"
    "create" in rc.change.actions
    msg := sprintf("%s may not be created (run %s)", [rc.address, input.run.id])
}
"""
COUNT = """package terraform.policies.tally
import rego.v1

changes := count(input.plan.resource_changes)
"""
LOOP = """package terraform.policies.slow
import rego.v1

deny contains "never" if {
    some i in numbers.range(1, 100000)
    some j in numbers.range(1, 100000)
    i == j + 100000000
}
"""
EXPLODE = """package terraform.policies.big
import rego.v1

deny contains "never" if { count([n | some n in numbers.range(1, 200000000)]) < 0 }
"""
STOPPED = ("the policy evaluation took longer than 1 s and was stopped",
           "the policy evaluation used more CPU time than allowed and was stopped")  # fmt: skip


def plan(*types: str) -> dict[str, Any]:
    changes = [{"address": f"{t}.x{i}", "type": t, "change": {"actions": ["create"]}} for i, t in enumerate(types)]
    return {"plan": {"resource_changes": changes}, "run": {"id": "run-abc"}}


class Counting:
    """An engine that answers `changes` with the number of resource changes and `types` with their types."""

    def check(self, modules: Any) -> str | None:
        return None

    def evaluate(self, modules: Any, queries: Any, input_doc: Any, data: Any = None) -> EngineResult:
        changes = input_doc["plan"]["resource_changes"]
        values = {"changes": len(changes), "types": sorted({c["type"] for c in changes})}
        return EngineResult(results=tuple(QueryResult(query=q, defined=True, value=values[q]) for q in queries))


class LambdaTwin:
    """Lambda's Invoke API for the function `policy` (the real handler, in-process); `timed-out` answers as a
    function that hit its timeout, `hangs` answers only once released, `echo` is the wire format around `Counting`."""

    def __init__(self) -> None:
        handler_spec = importlib.util.spec_from_file_location("terrace_fn_policy_contract", HANDLER)
        assert handler_spec and handler_spec.loader
        self.handler = importlib.util.module_from_spec(handler_spec)
        handler_spec.loader.exec_module(self.handler)
        self.release = threading.Event()
        self.invocations: list[str] = []
        twin = self

        class Invocations(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                match = INVOKE.match(self.path.split("?")[0])
                name = match.group(1) if match else ""
                twin.invocations.append(name)
                if name == "policy":
                    self._answer(200, twin.handler.lambda_handler(json.loads(body), None))
                elif name == "echo":
                    self._answer(200, serve(json.loads(body), lambda _limits: Counting()))
                elif name == "timed-out":
                    message = {"errorMessage": "Task timed out after 30.00 seconds", "errorType": "Sandbox.Timedout"}
                    self._answer(200, message, {"X-Amz-Function-Error": "Unhandled"})
                elif name == "hangs":
                    twin.release.wait(30)
                    self._answer(200, {})
                else:
                    error = {"Type": "User", "message": f"Function not found: {name}"}
                    self._answer(404, error, {"x-amzn-ErrorType": "ResourceNotFoundException"})

            def _answer(self, status: int, document: Any, headers: dict[str, str] | None = None) -> None:
                payload = json.dumps(document).encode()
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Invocations)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, name="lambda-twin", daemon=True
        )

    def __enter__(self) -> LambdaTwin:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


@pytest.fixture(scope="module")
def twin() -> Iterator[LambdaTwin]:
    with LambdaTwin() as running:
        yield running


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def function_engine(twin: LambdaTwin, name: str = "policy", *, timeout_s: float = 20, memory_mb: int = 256) -> Any:
    """The adapter the AWS composition root makes of these settings (`wiring/aws_adapters.policy_engine`)."""
    settings = Settings(
        table_name="t",
        blob_bucket="b",
        aws_endpoint_url=twin.url,
        policy_function=name,
        policy_timeout_s=timeout_s,
        policy_memory_mb=memory_mb,
    )
    engine = aws_adapters.policy_engine(settings)
    assert isinstance(engine, LambdaPolicyEngine)
    return engine


def local_engine(*, timeout_s: float = 20, memory_mb: int = 256) -> RegoPolicyEngine:
    """As `wiring/policy_services.py` makes it."""
    return RegoPolicyEngine(timeout_s=timeout_s, cpu_s=max(1, int(timeout_s)), memory_bytes=memory_mb * 1024 * 1024)


Factory = Callable[..., PolicyEngine]


@pytest.fixture(params=["local", "function"])
def make_engine(request: pytest.FixtureRequest) -> Factory:
    if request.param == "local":
        return local_engine
    request.getfixturevalue("aws_credentials")
    twin = request.getfixturevalue("twin")
    return lambda **limits: function_engine(twin, **limits)


# the contract ------------------------------------------------------------------------------------
def test_current_rego_denies_with_its_messages_and_allows_with_an_empty_set(make_engine: Factory) -> None:
    engine, query = make_engine(), "data.terraform.policies.no_null.deny"
    answer = engine.evaluate({"no_null.rego": DENY_NULL}, [query], plan("null_resource"))
    assert answer.error is None
    [result] = answer.results
    assert (result.query, result.defined) == (query, True)
    assert result.value == ["null_resource.x0 may not be created (run run-abc)"]
    allowed = engine.evaluate({"no_null.rego": DENY_NULL}, [query], plan("aws_s3_bucket"))
    assert allowed.error is None and allowed.results[0].value == []


def test_an_unknown_rule_is_undefined_and_data_is_read(make_engine: Factory) -> None:
    modules = {"a.rego": "package a\nimport rego.v1\nlimit := data.limits.max\n"}
    answer = make_engine().evaluate(modules, ["data.a.limit", "data.a.nothing"], {}, {"limits": {"max": 3}})
    assert [(r.defined, r.value) for r in answer.results] == [(True, 3), (False, None)]


def test_check_gives_the_engines_message_or_none(make_engine: Factory) -> None:
    engine = make_engine()
    message = engine.check({"bad.rego": "package bad\nimport rego.v1\ndeny contains msg if {\n  msg :=\n}\n"})
    assert message is not None and "bad.rego:4" in message and "Invalid assignment" in message
    assert engine.check({"good.rego": DENY_NULL}) is None
    assert engine.check({"slow.rego": LOOP}) is None  # compiling evaluates nothing


def test_a_policy_that_loops_ends_its_own_evaluation(make_engine: Factory) -> None:
    answer = make_engine(timeout_s=1).evaluate({"s.rego": LOOP}, ["data.terraform.policies.slow.deny"], {})
    assert answer.error in STOPPED and answer.results == ()


def test_a_policy_that_explodes_is_stopped_at_the_memory_limit_and_the_next_one_runs(make_engine: Factory) -> None:
    engine = make_engine(memory_mb=256)
    answer = engine.evaluate({"b.rego": EXPLODE}, ["data.terraform.policies.big.deny"], {})
    assert answer.error == "the policy evaluation used more than 256 MiB and was stopped"
    assert engine.check({"good.rego": DENY_NULL}) is None


def test_an_input_larger_than_a_pipe_buffer_is_evaluated(make_engine: Factory) -> None:
    document = plan(*(f"aws_instance.t{n % 50}" for n in range(4000)))
    assert len(json.dumps(document)) > 256 * 1024
    answer = make_engine(timeout_s=5).evaluate({"c.rego": COUNT}, ["data.terraform.policies.tally.changes"], document)
    assert answer.error is None and answer.results[0].value == 4000


@pytest.mark.usefixtures("aws_credentials")
def test_an_input_of_several_megabytes_crosses_to_the_function_and_back(twin: LambdaTwin) -> None:
    """Above Invoke's 6 MB request payload as JSON: the request (and the answer) travel compressed. The function
    `echo` is the real wire format around an engine that only counts (the engine's own limits are above)."""
    types = [f"aws_instance_with_a_long_type_name_{n % 50}" for n in range(60_000)]
    document = plan(*types)
    assert len(json.dumps(document)) > 7 * 1024 * 1024
    answer = function_engine(twin, "echo").evaluate({"c.rego": COUNT}, ["changes", "types"], document)
    assert answer.error is None
    assert [r.value for r in answer.results] == [60_000, sorted(set(types))]


# the function's failures are the evaluation's errors ----------------------------------------------
@pytest.mark.usefixtures("aws_credentials")
def test_a_function_that_timed_out_is_an_evaluation_error(twin: LambdaTwin) -> None:
    answer = function_engine(twin, "timed-out").evaluate({"a.rego": DENY_NULL}, ["data.a"], {})
    assert answer.error == "the policy function failed (Task timed out after 30.00 seconds)"
    assert function_engine(twin, "timed-out").check({"a.rego": DENY_NULL}) is not None  # never "compiles"


@pytest.mark.usefixtures("aws_credentials")
def test_a_missing_function_is_an_evaluation_error(twin: LambdaTwin) -> None:
    answer = function_engine(twin, "nosuch").evaluate({"a.rego": DENY_NULL}, ["data.a"], {})
    assert answer.error == "the policy function could not be invoked (ResourceNotFoundException)"


@pytest.mark.usefixtures("aws_credentials")
def test_an_unreachable_or_silent_function_is_an_evaluation_error(twin: LambdaTwin) -> None:
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=1, read_timeout=0.5, retries={"total_max_attempts": 1})
    silent = boto3.client("lambda", region_name="us-east-1", endpoint_url=twin.url, config=config)
    answer = LambdaPolicyEngine(silent, "hangs", timeout_s=1, memory_mb=64).evaluate({}, ["data.a"], {})
    assert answer.error == "the policy function could not be invoked (ReadTimeoutError)"
    closed = boto3.client("lambda", region_name="us-east-1", endpoint_url="http://127.0.0.1:9", config=config)
    answer = LambdaPolicyEngine(closed, "policy", timeout_s=1, memory_mb=64).evaluate({}, ["data.a"], {})
    assert answer.error == "the policy function could not be invoked (EndpointConnectionError)"


@pytest.mark.usefixtures("aws_credentials")
def test_an_input_too_large_even_compressed_is_refused_before_any_invocation(twin: LambdaTwin) -> None:
    before = len(twin.invocations)
    noise = os.urandom(5 * 1024 * 1024).hex()  # hex of random bytes: gzip halves it at best
    answer = function_engine(twin).evaluate({"c.rego": COUNT}, ["data.terraform.policies.tally.changes"], {"n": noise})
    assert answer.error == "the policy input is larger than the policy function accepts (5 MiB)"
    assert len(twin.invocations) == before


def test_the_function_reads_only_its_own_wire_format() -> None:
    from terrace.adapters.lambda_policy_engine import result_of
    from terrace.wiring.policy_function import handle

    for event in ({}, {"op": "evaluate"}, {"op": "evaluate", "request": "not base64!"}, ["a list"]):
        assert (result_of(handle(event)).error or "").startswith("the policy function could not read its request")


def test_the_function_keeps_limits_within_its_own_ceilings() -> None:
    from terrace.wiring.policy_function import engine_for

    engine = engine_for({"timeout_s": 3600, "memory_mb": 1_000_000})
    assert (engine.limits.timeout_s, engine.limits.cpu_s, engine.limits.memory_bytes) == (20.0, 20, 768 * 1024 * 1024)
    engine = engine_for({"timeout_s": "lots", "memory_mb": None})
    assert (engine.limits.timeout_s, engine.limits.memory_bytes) == (10.0, 512 * 1024 * 1024)


def test_the_composition_roots_choose_the_function_on_aws_only() -> None:
    from terrace.bootstrap import Container, build_memory

    assert aws_adapters.policy_engine(Settings(table_name="t", blob_bucket="b")) is None  # moto stack: the child
    assert isinstance(build_memory().policy_engine, RegoPolicyEngine)
    remote = LambdaPolicyEngine(object(), "policy", timeout_s=1, memory_mb=64)
    container = Container(settings=build_memory().settings, table=build_memory().table, blobs=build_memory().blobs,
                          remote_policy_engine=remote)  # fmt: skip
    assert container.policy_engine is remote
    assert container.policy_evaluation_worker._engine is remote and container.policies._engine is remote


@pytest.mark.usefixtures("aws_credentials")
def test_the_same_function_parses_uploaded_hcl_through_boto3(twin: LambdaTwin) -> None:
    """The HCL reader the AWS composition root makes (`wiring/aws_adapters.hcl_reader`) invokes the policy function
    with a `parse-hcl` request (`adapters/lambda_hcl_reader.py`); the real handler parses it in its bounded child."""
    from terrace.adapters.lambda_hcl_reader import LambdaHclReader

    settings = Settings(table_name="t", blob_bucket="b", aws_endpoint_url=twin.url, policy_function="policy")
    reader = aws_adapters.hcl_reader(settings)
    assert isinstance(reader, LambdaHclReader)
    parsed = reader.parse({"main.tf": 'variable "region" {\n  type = string\n}\n', "bad.tf": "variable {"})
    assert parsed.documents["main.tf"]["variable"] == [{'"region"': {"type": "string", "__is_block__": True}}]
    assert "bad.tf" in parsed.errors and twin.invocations[-1] == "policy"
    missing = aws_adapters.hcl_reader(Settings(table_name="t", blob_bucket="b", aws_endpoint_url=twin.url,
                                               policy_function="nosuch")).parse({"main.tf": "x = 1\n"})  # fmt: skip
    assert missing.stopped == "the policy function could not be invoked (ResourceNotFoundException)"
