"""The `curl` equivalent of a UI form: the JSON:API call that does the same, shown under the form in a
`<details>` (`_curl.html`), with the server's address as the browser reached it and `$TOKEN` for the caller's
API token."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request


def _quoted(text: str) -> str:
    """`text` as one single-quoted shell word."""
    return "'" + text.replace("'", "'\\''") + "'"


def curl_command(request: Request, method: str, path: str, body: Any = None) -> str:
    """The command line, one option a line: `method` on `path` (under /api/v2) with `body` as its JSON document."""
    url = f"{request.url.scheme}://{request.url.netloc}/api/v2{path}"
    lines = [f"curl -X {method} {_quoted(url)}" if method != "GET" else f"curl {_quoted(url)}",
             '-H "Authorization: Bearer $TOKEN"']  # fmt: skip
    if body is not None:
        lines += ['-H "Content-Type: application/vnd.api+json"', "-d " + _quoted(json.dumps(body, indent=2))]
    return " \\\n  ".join(lines)
