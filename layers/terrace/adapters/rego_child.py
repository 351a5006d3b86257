"""The child process of `rego_policy_engine.py`: compiles and evaluates with `regopy`.

Started by `tenant_process.py` (which limits it and gives it an empty environment); empties even that
(`tenant_process.enter`) before anything else, reads one JSON request on stdin (`modules`, `queries`, `input`,
`data`), writes one JSON answer on the stdout it was given. The engine's own diagnostics (it prints compile
errors) go to a temporary file, kept as the message of a failure.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from typing import Any

from terrace.adapters import tenant_process

MESSAGE_MAX = 4000
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# A package declaration followed by more on its line (a rule, a comment): OPA ends the declaration with its path
# (go-tfe uploads `package example rule["not allowed"] { false }`); rego-cpp reads it to the end of the line and
# refuses it.
_PACKAGE_AND_MORE = re.compile(
    rf"^([ \t]*package[ \t]+{_NAME}(?:\.{_NAME}|\[\"(?:[^\"\\\n]|\\.)*\"\])*)[ \t]+(?=\S)", re.MULTILINE
)


def opa_lines(text: str) -> str:
    """`text` with what follows its package path on the package's line moved to a line of its own (as OPA reads
    it); any other module is unchanged."""
    return _PACKAGE_AND_MORE.sub("\\1\n", text, count=1)


def _value(raw: str) -> tuple[bool, Any]:
    text = raw.strip()
    if not text or text == "undefined":
        return False, None
    parsed = json.loads(text)
    expressions = parsed.get("expressions") if isinstance(parsed, dict) else None
    if not expressions:
        return False, None
    return True, expressions[0]


def _diagnostics(log: Any, exc: BaseException) -> str:
    log.flush()
    log.seek(0)
    printed = log.read().decode(errors="replace").strip()
    message = printed or str(exc).strip() or type(exc).__name__
    return message[:MESSAGE_MAX]


def run(request: dict[str, Any], log: Any) -> dict[str, Any]:
    from regopy import Interpreter  # imported by `enter`, in the emptied environment

    rego = Interpreter()
    try:
        for name, text in sorted(request["modules"].items()):
            rego.add_module(name, opa_lines(text))
        if request.get("data") is not None:
            rego.add_data_json(json.dumps(request["data"]))
        rego.set_input_term(json.dumps(request.get("input")))
        rego.build("data")  # compiles every module without evaluating: a compile error is the whole evaluation's
    except Exception as exc:  # regopy raises RegoError (and prints the readable message)
        return {"error": _diagnostics(log, exc)}
    results = []
    for query in request.get("queries", []):
        try:
            output = rego.query(query)
            if not output.ok():
                results.append({"query": query, "defined": False, "error": str(output)[:MESSAGE_MAX]})
                continue
            defined, value = _value(str(output))
            results.append({"query": query, "defined": defined, "value": value})
        except Exception as exc:
            results.append({"query": query, "defined": False, "error": _diagnostics(log, exc)})
    return {"results": results}


def main() -> None:
    tenant_process.enter(preload=("regopy",))
    request = json.loads(sys.stdin.buffer.read())
    answer = os.fdopen(os.dup(1), "w")
    log = tempfile.TemporaryFile()
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    try:
        result = run(request, log)
    except MemoryError:
        result = {"error": "the policy evaluation ran out of memory"}
    answer.write(json.dumps(result))
    answer.flush()


if __name__ == "__main__":
    main()
