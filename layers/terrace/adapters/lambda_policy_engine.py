"""The policy engine in a Lambda function of its own (AWS): `functions/policy/handler.py` runs `RegoPolicyEngine`
there, in a function whose role may only write its own logs (`infra/functions.py`), so tenant Rego never runs in a
process that holds the table, the bucket, the queues or a secret. This adapter invokes it synchronously.

The wire format lives here, both halves: the request (`check` or `evaluate`, the modules, queries, input, data and
the limits, as gzip-compressed JSON in base64, so a plan JSON of tens of MB fits Invoke's 6 MB payload) and the
answer (`EngineResult` as JSON, compressed alike). Whatever goes wrong with the function — an input still too large,
an invocation that fails, throttles or times out, a function error, an answer that does not parse — is the
evaluation's error (`EngineResult.error`), never an exception of the caller.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from terrace.adapters.policy_engine import EngineResult, PolicyEngine, QueryResult

PAYLOAD_MAX = 6 * 1024 * 1024 - 64 * 1024  # Invoke's synchronous request limit, less the envelope
EXPANDED_MAX = 64 * 1024 * 1024  # a compressed request or answer never expands past this (a bomb is refused)
MESSAGE_MAX = 4000


def pack(document: Any) -> str:
    return base64.b64encode(gzip.compress(json.dumps(document).encode(), compresslevel=6)).decode()


def unpack(packed: Any) -> Any:
    """The JSON document `pack` made, read within EXPANDED_MAX (ValueError when it is not one)."""
    if not isinstance(packed, str):
        raise ValueError("not a packed document")
    inflater = zlib.decompressobj(wbits=31)  # gzip
    raw = inflater.decompress(base64.b64decode(packed, validate=True), EXPANDED_MAX + 1)
    if len(raw) > EXPANDED_MAX or inflater.unconsumed_tail:
        raise ValueError(f"the document is larger than {EXPANDED_MAX} bytes")
    return json.loads(raw)


def request_payload(
    op: str, modules: Mapping[str, str], queries: Sequence[str], input_doc: Any, data: Any, limits: dict[str, Any]
) -> bytes:
    body = {"modules": dict(modules), "queries": list(queries), "input": input_doc, "data": data}
    return json.dumps({"op": op, "limits": limits, "request": pack(body)}).encode()


def answer_document(result: EngineResult) -> dict[str, Any]:
    return {
        "answer": pack(
            {
                "error": result.error,
                "results": [
                    {"query": r.query, "defined": r.defined, "value": r.value, "error": r.error} for r in result.results
                ],
            }
        )
    }


def result_of(answer: Mapping[str, Any]) -> EngineResult:
    """The `EngineResult` of the function's answer document (ValueError/KeyError/TypeError when malformed)."""
    body = unpack(answer["answer"])
    if body.get("error"):
        return EngineResult(error=str(body["error"])[:MESSAGE_MAX])
    return EngineResult(
        results=tuple(
            QueryResult(
                query=str(r["query"]), defined=bool(r["defined"]), value=r.get("value"), error=r.get("error") or None
            )
            for r in body.get("results", [])
        )
    )


def serve(event: Mapping[str, Any], engine_for: Callable[[Mapping[str, Any]], PolicyEngine]) -> dict[str, Any]:
    """The policy function's side: one request to the engine `engine_for(limits)` builds, its answer document."""
    try:
        op = event["op"]
        body = unpack(event["request"])
        modules, queries = dict(body["modules"]), [str(q) for q in body["queries"]]
    except (KeyError, TypeError, ValueError) as exc:
        return answer_document(EngineResult(error=f"the policy function could not read its request ({exc})"))
    limits = event.get("limits")
    engine = engine_for(limits if isinstance(limits, Mapping) else {})
    if op == "check":
        return answer_document(EngineResult(error=engine.check(modules)))
    if op != "evaluate":
        return answer_document(EngineResult(error=f"the policy function does not know {op!r}"))
    return answer_document(engine.evaluate(modules, queries, body.get("input"), body.get("data")))


class LambdaPolicyEngine:
    def __init__(self, client: Any, function_name: str, *, timeout_s: float, memory_mb: int) -> None:
        """`client`: a boto3 Lambda client whose read timeout outlasts the function's (the composition root's)."""
        self._client, self._function = client, function_name
        self._limits = {"timeout_s": timeout_s, "memory_mb": memory_mb}

    def check(self, modules: Mapping[str, str]) -> str | None:
        return self._invoke("check", modules, [], None, None).error

    def evaluate(
        self, modules: Mapping[str, str], queries: Sequence[str], input_doc: Any, data: Any = None
    ) -> EngineResult:
        return self._invoke("evaluate", modules, queries, input_doc, data)

    def _invoke(
        self, op: str, modules: Mapping[str, str], queries: Sequence[str], input_doc: Any, data: Any
    ) -> EngineResult:
        payload = request_payload(op, modules, queries, input_doc, data, self._limits)
        if len(payload) > PAYLOAD_MAX:
            mib = PAYLOAD_MAX // (1024 * 1024)
            return EngineResult(error=f"the policy input is larger than the policy function accepts ({mib} MiB)")
        try:
            response = self._client.invoke(
                FunctionName=self._function, InvocationType="RequestResponse", Payload=payload
            )
            raw = response["Payload"].read()
        except Exception as exc:  # noqa: BLE001 - throttled, timed out, unreachable: this evaluation's error
            return EngineResult(error=f"the policy function could not be invoked ({type(exc).__name__})")
        if response.get("FunctionError"):
            return EngineResult(error=f"the policy function failed ({function_error(raw)})")
        try:
            return result_of(json.loads(raw))
        except (KeyError, TypeError, ValueError, AttributeError):
            return EngineResult(error="the policy function's answer could not be read")


def function_error(raw: bytes) -> str:
    """The function's own error message (`Task timed out after 30.00 seconds`, ...), shortened."""
    try:
        message = json.loads(raw).get("errorMessage")
    except (ValueError, AttributeError):
        message = None
    return str(message or "no message")[:200]
