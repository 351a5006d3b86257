"""Uploaded HCL on AWS is parsed in the policy function (`adapters/lambda_hcl_reader.py`), never in the api or events
function: the request's shape and its bounds, the real function handler's answer (its bounded child, in-process
here), and every way the invocation can fail leaving each file with an error, never an exception."""

from __future__ import annotations

import base64
import io
import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from terrace.adapters.lambda_hcl_reader import OP, LambdaHclReader, answer_document, parsed_of
from terrace.adapters.lambda_policy_engine import PAYLOAD_MAX, pack, unpack
from terrace.wiring import policy_function

MAIN = 'variable "region" {\n  type = string\n}\noutput "arn" {\n  value = "arn:${var.region}"\n}\n'


class Client:
    """boto3's Lambda client as the reader calls it; `answer` makes the function's side of one invocation."""

    def __init__(self, answer: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.answer = answer or policy_function.handle  # the real handler's composition

    def invoke(self, *, FunctionName: str, InvocationType: str, Payload: bytes) -> dict[str, Any]:  # noqa: N803
        assert FunctionName == "policy" and InvocationType == "RequestResponse"
        request = json.loads(Payload)
        self.requests.append(request)
        return {"Payload": io.BytesIO(json.dumps(self.answer(request)).encode())}


def test_the_request_carries_the_files_within_the_budget_and_the_limits() -> None:
    client = Client()
    reader = LambdaHclReader(client, "policy", bytes_max=len(MAIN) + 10, cpu_s=5, timeout_s=12.0, memory_mb=256)
    parsed = reader.parse({"main.tf": MAIN, "big.tf": "x" * 100})
    (request,) = client.requests
    assert request["op"] == OP == "parse-hcl"
    assert request["limits"] == {"bytes_max": len(MAIN) + 10, "cpu_s": 5, "timeout_s": 12.0, "memory_mb": 256}
    assert unpack(request["request"]) == {"files": {"main.tf": MAIN}}  # past the budget: never sent
    assert parsed.errors == {"big.tf": f"not read: the upload's HCL is read up to {len(MAIN) + 10} bytes"}
    # python-hcl2's document, as `ProcessHclReader` gives it on the embedded server
    assert parsed.documents["main.tf"]["variable"] == [{'"region"': {"type": "string", "__is_block__": True}}]
    assert parsed.documents["main.tf"]["output"][0]['"arn"']["value"] == '"arn:${var.region}"'


def test_nothing_within_the_budget_invokes_nothing() -> None:
    client = Client()
    parsed = LambdaHclReader(client, "policy", bytes_max=4).parse({"main.tf": MAIN})
    assert not client.requests and not parsed.documents and parsed.errors["main.tf"].startswith("not read")


def test_the_function_holds_the_limits_within_its_ceilings() -> None:
    huge = policy_function.hcl_reader_for({"bytes_max": 10**12, "cpu_s": 10**6, "timeout_s": 1e9, "memory_mb": 1e9})
    assert huge.bytes_max == policy_function.HCL_BYTES_MAX
    assert huge.limits.timeout_s == policy_function.TIMEOUT_MAX_S
    assert huge.limits.cpu_s <= policy_function.TIMEOUT_MAX_S
    assert huge.limits.memory_bytes == policy_function.MEMORY_MAX_MB * 1024 * 1024
    odd = policy_function.hcl_reader_for({"bytes_max": "all", "cpu_s": True, "timeout_s": -5, "memory_mb": None})
    assert odd.bytes_max == 512 * 1024 and odd.limits.cpu_s >= 1 and odd.limits.timeout_s == 0.1
    default = policy_function.hcl_reader_for({})
    assert (default.bytes_max, default.limits.cpu_s, default.limits.timeout_s) == (512 * 1024, 6, 12.0)


def test_the_function_bounds_a_file_past_its_own_budget_even_when_asked_for_more() -> None:
    text = "# " + "x" * (policy_function.HCL_BYTES_MAX + 1)
    answer = policy_function.handle({"op": OP, "limits": {"bytes_max": 10**9}, "request": pack({"files": {"a": text}})})
    parsed = parsed_of(answer, {"a": ""})
    assert not parsed.documents and "is read up to" in parsed.errors["a"]


@pytest.mark.parametrize(
    "request_doc",
    [{"op": OP}, {"op": OP, "request": "not base64!"}, {"op": OP, "request": pack({"files": {"a": 1}})}, {"op": OP,
     "request": pack({"files": ["a"]})}],
)  # fmt: skip
def test_a_request_the_function_cannot_read_is_answered_not_raised(request_doc: dict[str, Any]) -> None:
    parsed = parsed_of(policy_function.handle(request_doc), {})
    assert parsed.stopped and "could not read its request" in parsed.stopped


def _error(_request: dict[str, Any]) -> Any:
    raise ConnectionError("unreachable")


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (_error, "could not be invoked (ConnectionError)"),
        (lambda _r: {"answer": "garbage"}, "answer could not be read"),
        (lambda _r: {"answer": pack({"documents": [], "errors": {}, "stopped": None})}, "answer could not be read"),
        (lambda _r: [1, 2], "answer could not be read"),
    ],
)
def test_a_failed_invocation_leaves_each_file_with_an_error(answer: Any, words: str) -> None:
    parsed = LambdaHclReader(Client(answer), "policy").parse({"main.tf": MAIN, "b.tf": MAIN})
    assert not parsed.documents and parsed.stopped and words in parsed.stopped
    assert set(parsed.errors) == {"main.tf", "b.tf"} and all(words in e for e in parsed.errors.values())


def test_a_function_error_is_each_files_error() -> None:
    class Failing(Client):
        def invoke(self, **kwargs: Any) -> dict[str, Any]:
            message = {"errorMessage": "Task timed out after 30.00 seconds"}
            return {"FunctionError": "Unhandled", "Payload": io.BytesIO(json.dumps(message).encode())}

    parsed = LambdaHclReader(Failing(), "policy").parse({"main.tf": MAIN})
    assert parsed.stopped and "Task timed out after 30.00 seconds" in parsed.stopped
    assert parsed.errors["main.tf"].startswith("not read: reading the upload's HCL failed")


def test_an_upload_larger_than_invoke_takes_is_refused_before_invoking() -> None:
    client = Client()
    noise = "# " + base64.b64encode(random.Random(1).randbytes(PAYLOAD_MAX)).decode()  # gzip cannot shrink it
    parsed = LambdaHclReader(client, "policy", bytes_max=64 * 1024 * 1024).parse({"main.tf": noise})
    assert not client.requests and parsed.stopped and "larger than the policy function accepts" in parsed.stopped


def test_the_answer_keeps_only_the_files_sent_and_what_the_child_did_not_reach_is_not_read() -> None:
    def partial(_request: dict[str, Any]) -> dict[str, Any]:
        from terrace.adapters.hcl_reader import ParsedHcl

        return answer_document(
            ParsedHcl(documents={"main.tf": {"a": 1}, "other.tf": {"b": 2}}, stopped="reading took too long")
        )

    parsed = LambdaHclReader(Client(partial), "policy").parse({"main.tf": MAIN, "late.tf": MAIN})
    assert parsed.documents == {"main.tf": {"a": 1}}
    assert parsed.errors == {"late.tf": "not read: reading took too long"} and parsed.stopped == "reading took too long"


def test_the_policy_functions_rego_requests_are_unchanged() -> None:
    answer = policy_function.handle({"op": "unknown", "request": pack({"modules": {}, "queries": []})})
    assert "does not know 'unknown'" in json.dumps(unpack(answer["answer"]))
