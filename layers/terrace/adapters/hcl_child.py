"""The child process of `process_hcl_reader.py`: parses HCL files with python-hcl2.

Started by `tenant_process.py` (limited, with an empty environment, which it empties again first); reads one JSON
request on stdin (`files`: name -> text) and writes one JSON line per file as soon as it is parsed (`name` and
`document`, or `name` and `error`), so what was parsed before a limit stopped it is kept.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from terrace.adapters import tenant_process

MESSAGE_MAX = 500


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:MESSAGE_MAX]


def main() -> None:
    tenant_process.enter(preload=("hcl2",))
    request = json.loads(sys.stdin.buffer.read())
    import hcl2  # python-hcl2 (lark), imported by `enter`, in the emptied environment

    out = sys.stdout
    for name, text in request["files"].items():
        line: dict[str, Any] = {"name": name}
        try:
            document = hcl2.loads(text)
            line["document"] = document if isinstance(document, dict) else {}
        except Exception as exc:  # lark's parse errors have no common base class worth naming here
            line["error"] = _message(exc)
        out.write(json.dumps(line, default=str) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
