"""The HCL reader (`hcl_reader.py`) in the policy function (AWS): `functions/policy/handler.py` parses with
`ProcessHclReader` (its bounded child, `hcl_child.py`) there, under a role that may only write its own logs, so an
uploaded module's `.tf` files or a policy set's `policies.hcl` are never parsed in a process of the api or events
function, whose role reaches the table, the bucket and the queues (Lambda runs every process of a function as one
uid: a child there could read what that uid reads). This adapter invokes it synchronously, as
`lambda_policy_engine.py` does, with a request of its own kind (`op: parse-hcl`).

The wire format lives here, both halves: the request (the files within the budget, as gzip-compressed JSON in
base64, and the limits: bytes, CPU seconds, memory, wall-clock time, each held within the function's ceilings by
`wiring/policy_function.py`) and the answer (each file's document or error, and why parsing stopped). The budget
is applied here before anything is sent; whatever goes wrong with the function (too large, not invoked, a function
error, an answer that does not parse) leaves each file sent with an error and `stopped` saying why, never an
exception of the caller.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from terrace.adapters.hcl_reader import HclReader, ParsedHcl
from terrace.adapters.lambda_policy_engine import MESSAGE_MAX, PAYLOAD_MAX, function_error, pack, unpack
from terrace.adapters.process_hcl_reader import unread, within_budget

OP = "parse-hcl"


def request_payload(files: Mapping[str, str], limits: Mapping[str, Any]) -> bytes:
    return json.dumps({"op": OP, "limits": dict(limits), "request": pack({"files": dict(files)})}).encode()


def answer_document(parsed: ParsedHcl) -> dict[str, Any]:
    return {"answer": pack({"documents": parsed.documents, "errors": parsed.errors, "stopped": parsed.stopped})}


def parsed_of(answer: Mapping[str, Any], names: Mapping[str, str]) -> ParsedHcl:
    """The `ParsedHcl` of the function's answer, of the files sent (`names`) only (ValueError when malformed)."""
    body = unpack(answer["answer"])
    documents, errors, stopped = body.get("documents"), body.get("errors"), body.get("stopped")
    if not isinstance(documents, dict) or not isinstance(errors, dict) or not isinstance(stopped, str | None):
        raise ValueError("not a parse answer")
    return ParsedHcl(
        documents={n: d for n, d in documents.items() if n in names and isinstance(d, dict)},
        errors={n: str(e)[:MESSAGE_MAX] for n, e in errors.items() if n in names},
        stopped=stopped[:MESSAGE_MAX] if stopped else None,
    )


def serve(event: Mapping[str, Any], reader_for: Callable[[Mapping[str, Any]], HclReader]) -> dict[str, Any]:
    """The policy function's side: one parse request to the reader `reader_for(limits)` builds, its answer."""
    try:
        files = unpack(event["request"])["files"]
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise ValueError("files must map names to text")
    except (KeyError, TypeError, ValueError) as exc:
        return answer_document(ParsedHcl(stopped=f"the policy function could not read its request ({exc})"))
    limits = event.get("limits")
    return answer_document(reader_for(limits if isinstance(limits, Mapping) else {}).parse(files))


class LambdaHclReader:
    def __init__(
        self,
        client: Any,
        function_name: str,
        *,
        bytes_max: int = 512 * 1024,
        cpu_s: int = 6,
        timeout_s: float = 12.0,
        memory_mb: int = 512,
    ) -> None:
        """`client`: a boto3 Lambda client whose read timeout outlasts `timeout_s` (the composition root's). The
        defaults are `ProcessHclReader`'s, the same reader on the function's side."""
        self._client, self._function, self.bytes_max = client, function_name, bytes_max
        self.limits = {"bytes_max": bytes_max, "cpu_s": cpu_s, "timeout_s": timeout_s, "memory_mb": memory_mb}

    def parse(self, files: Mapping[str, str]) -> ParsedHcl:
        given, errors = within_budget(files, self.bytes_max)
        if not given:
            return ParsedHcl(errors=errors)
        payload = request_payload(given, self.limits)
        if len(payload) > PAYLOAD_MAX:
            return self._failed(given, errors, "the upload's HCL is larger than the policy function accepts")
        try:
            response = self._client.invoke(
                FunctionName=self._function, InvocationType="RequestResponse", Payload=payload
            )
            raw = response["Payload"].read()
        except Exception as exc:  # noqa: BLE001 - throttled, timed out, unreachable: this upload's error
            return self._failed(given, errors, f"the policy function could not be invoked ({type(exc).__name__})")
        if response.get("FunctionError"):
            why = f"reading the upload's HCL failed in the policy function ({function_error(raw)})"
            return self._failed(given, errors, why)
        try:
            parsed = parsed_of(json.loads(raw), given)
        except (KeyError, TypeError, ValueError, AttributeError):
            return self._failed(given, errors, "the policy function's answer could not be read")
        errors.update(parsed.errors)
        unread(given, parsed.documents, errors, parsed.stopped)
        return ParsedHcl(documents=parsed.documents, errors=errors, stopped=parsed.stopped)

    @staticmethod
    def _failed(given: Mapping[str, str], errors: dict[str, str], why: str) -> ParsedHcl:
        unread(given, {}, errors, why)
        return ParsedHcl(errors=errors, stopped=why)
