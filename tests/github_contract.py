"""GitHub's own published descriptions, as the forge twin (`forge_twin.py`) holds Terrace to them: the REST API's
OpenAPI document (npm `@octokit/openapi`, its `api.github.com.json`: only the operations Terrace may call are read
out of it, once per process) and the webhook payloads' JSON schemas (npm `@octokit/webhooks-schemas`). Both are
devDependencies in package.json (`make install` puts them in node_modules); without them the tests that need
them skip, saying so.

- `Contract.check_request(method, path, query, body)`: the problems of a request (none: it is one of the operations
  Terrace may call, relative to the api-url, its query parameters are the operation's, its body valid).
- `Contract.payload(event, overrides)`: a delivery's payload that validates against GitHub's schema of the event
  (`push$event`, `pull_request$opened`, ...): its required members made from the schema, then `overrides` deep-merged,
  and validated again.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path
from typing import Any

import jsonschema

NODE = Path(__file__).resolve().parents[1] / "node_modules" / "@octokit"
OPENAPI = NODE / "openapi" / "generated" / "api.github.com.json"
WEBHOOKS = NODE / "webhooks-schemas" / "schema.json"

# The REST calls Terrace may make (adapters/forge.py), relative to the api-url; the OpenAPI document's paths.
ALLOWED: tuple[tuple[str, str], ...] = (
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}"),
    ("get", "/repos/{owner}/{repo}/tarball/{ref}"),
    ("get", "/repos/{owner}/{repo}/compare/{basehead}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/files"),
    ("post", "/repos/{owner}/{repo}/hooks"),
    ("delete", "/repos/{owner}/{repo}/hooks/{hook_id}"),
    ("post", "/repos/{owner}/{repo}/statuses/{sha}"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    # as the deployment's GitHub App (adapters/github_app.py)
    ("get", "/app/installations"),
    ("get", "/app/installations/{installation_id}"),
    ("post", "/app/installations/{installation_id}/access_tokens"),
    ("get", "/installation/repositories"),
)


def missing() -> str | None:
    """Why the contract cannot be checked here (None: it can)."""
    for path in (OPENAPI, WEBHOOKS):
        if not path.exists():
            return f"{path} is missing: run `make install` (npm ci installs GitHub's published descriptions)"
    return None


def _nullable(node: Any) -> Any:
    """OpenAPI 3.0's `nullable: true` as JSON Schema says it."""
    if isinstance(node, list):
        return [_nullable(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: _nullable(v) for k, v in node.items() if k not in ("example", "examples", "description")}
    if node.pop("nullable", False):
        if isinstance(node.get("type"), str):
            node["type"] = [node["type"], "null"]
            if "enum" in node:
                node["enum"] = [*node["enum"], None]
        else:
            node = {"anyOf": [node, {"type": "null"}]}
    return node


def _template(path: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(path)) + "$")


@functools.cache
def contract() -> Contract:
    return Contract()


class Contract:
    def __init__(self) -> None:
        document = json.loads(OPENAPI.read_text())
        self.components = _nullable(document["components"])
        self.operations = {(m, p): self._resolved(document["paths"][p][m]) for m, p in ALLOWED}
        self.webhooks = json.loads(WEBHOOKS.read_text())

    def _resolved(self, operation: dict[str, Any]) -> dict[str, Any]:
        parameters = []
        for p in operation.get("parameters", []):
            if "$ref" in p:
                p = self.components["parameters"][p["$ref"].rsplit("/", 1)[1]]
            parameters.append(p)
        body = ((operation.get("requestBody") or {}).get("content") or {}).get("application/json", {}).get("schema")
        return {"parameters": parameters, "body": _nullable(body) if body else None,
                "required": bool((operation.get("requestBody") or {}).get("required"))}  # fmt: skip

    def check_request(self, method: str, path: str, query: dict[str, str], body: bytes) -> list[str]:
        found = [(key, op) for key, op in self.operations.items() if key[0] == method and _template(key[1]).match(path)]
        if not found:
            return [f"{method.upper()} {path} is not one of the REST calls Terrace may make"]
        (_, template), op = found[0]
        problems = []
        names = {p["name"] for p in op["parameters"] if p.get("in") == "query"}
        problems += [f"{method.upper()} {template}: unknown query parameter {q}" for q in query if q not in names]
        if op["body"] is not None:
            try:
                document = json.loads(body or b"null")
                schema = {**op["body"], "components": self.components}
                jsonschema.Draft202012Validator(schema).validate(document)
            except (ValueError, jsonschema.ValidationError) as exc:
                problems.append(f"{method.upper()} {template}: body: {str(exc).splitlines()[0]}")
        elif body:
            problems.append(f"{method.upper()} {template}: a body where GitHub takes none")
        return problems

    # webhook payloads ---------------------------------------------------------------------
    def _definition(self, name: str) -> dict[str, Any]:
        return {"$ref": f"#/definitions/{name}", "definitions": self.webhooks["definitions"]}

    def check_payload(self, definition: str, payload: Any) -> None:
        jsonschema.Draft7Validator(self._definition(definition)).validate(payload)

    def payload(self, definition: str, overrides: dict[str, Any]) -> dict[str, Any]:
        made = _merged(self._example(self._definition(definition)["$ref"]), overrides)
        self.check_payload(definition, made)
        return made

    def _example(self, ref_or_schema: Any, depth: int = 0) -> Any:
        schema = ref_or_schema
        if isinstance(schema, str):  # a $ref
            schema = self.webhooks["definitions"][schema.rsplit("/", 1)[1]]
        if depth > 40:
            return None
        if "$ref" in schema:
            return self._example(schema["$ref"], depth + 1)
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                merged = _merged(merged, self._example(part, depth + 1) or {})
            return merged
        for key in ("oneOf", "anyOf"):
            if key in schema:
                return self._example(schema[key][0], depth + 1)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return schema["enum"][0]
        kind = schema.get("type", "object")
        kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
        if kind == "object":
            props = schema.get("properties", {})
            return {name: self._example(props.get(name, {}), depth + 1) for name in schema.get("required", [])}
        if kind == "array":
            return [self._example(schema.get("items", {}), depth + 1)] if schema.get("minItems") else []
        if kind == "string":
            fmt = schema.get("format")
            return {"date-time": "2026-01-01T00:00:00Z", "uri": "https://forge.test/x", "email": "a@forge.test",
                    "uri-template": "https://forge.test/x{/y}"}.get(fmt or "", "x")  # fmt: skip
        return {"integer": 1, "number": 1, "boolean": False, "null": None}.get(kind)


def _merged(base: Any, overrides: Any) -> Any:
    if isinstance(base, dict) and isinstance(overrides, dict):
        out = copy.deepcopy(base)
        for key, value in overrides.items():
            out[key] = _merged(out.get(key), value)
        return out
    return copy.deepcopy(overrides)
