"""OpenAPI request bodies of the endpoints that read their body through `jsonapi.JSONBody`/`RawBody`.

The endpoints parse and validate bodies themselves (liberal in what they accept, strict in what they store);
these schemas only describe the documents clients send, for `/api/openapi.json` and the schema fuzzer.
"""

from __future__ import annotations

from typing import Any

from terrace.domain import limits

STRING: dict[str, Any] = {"type": "string"}
BOOL: dict[str, Any] = {"type": "boolean"}


def text(max_length: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length}


def _relationship(type_: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "data": {
                "type": "object",
                "properties": {"type": {"type": "string", "enum": [type_]}, "id": STRING},
                "required": ["type", "id"],
            }
        },
    }


def document(
    type_: str,
    attributes: dict[str, Any],
    relationships: dict[str, str] | None = None,
    *,
    required: list[str] | None = None,
) -> dict[str, Any]:
    """`openapi_extra` for a JSON:API document `{data: {type, attributes, relationships}}`."""
    data: dict[str, Any] = {
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": [type_]},
            "attributes": {"type": "object", "properties": attributes, "required": required or []},
        },
        "required": ["type"],
    }
    if relationships:
        data["properties"]["relationships"] = {
            "type": "object",
            "properties": {name: _relationship(target) for name, target in relationships.items()},
        }
    return raw_json({"type": "object", "properties": {"data": data}, "required": ["data"]}, "application/vnd.api+json")


def raw_json(schema: dict[str, Any], media_type: str = "application/json", *, required: bool = True) -> dict[str, Any]:
    return {"requestBody": {"required": required, "content": {media_type: {"schema": schema}}}}


NAME = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$"}
ORGANIZATION = document(
    "organizations",
    {
        "name": NAME,
        "email": {"type": "string", "format": "email", "maxLength": limits.EMAIL_MAX},
        "default-execution-mode": {"type": "string", "enum": ["remote", "local", "agent"]},
        "session-timeout": {"type": "integer"},
    },
    required=["name", "email"],
)
WORKSPACE = document(
    "workspaces",
    {
        "name": NAME,
        "description": text(limits.DESCRIPTION_MAX),
        "execution-mode": {"type": "string", "enum": ["remote", "local", "agent"]},
        "auto-apply": BOOL,
        "auto-apply-run-trigger": BOOL,
        "terraform-version": STRING,
        "iac-platform": {"type": "string", "enum": ["terraform", "opentofu"]},  # Terrace's: the tool its runs use
        "working-directory": text(limits.WORKING_DIRECTORY_MAX),
        "global-remote-state": BOOL,
        "queue-all-runs": BOOL,
        "speculative-enabled": BOOL,
        "allow-destroy-plan": BOOL,
        "source-url": text(limits.TEXT_ATTRIBUTE_MAX),
        "source-name": text(limits.TEXT_ATTRIBUTE_MAX),
        "trigger-prefixes": {"type": "array", "items": STRING},
        "trigger-patterns": {"type": "array", "items": STRING},
        "file-triggers-enabled": BOOL,
        "vcs-repo": {
            "type": "object",
            "nullable": True,
            "properties": {
                "identifier": text(201),
                "branch": text(255),
                "oauth-token-id": STRING,
                "ingress-submodules": BOOL,
                "tags-regex": text(255),
            },
        },
    },
    {"tags": "tags"},
    required=["name"],
)
TAGS = raw_json(
    {
        "type": "object",
        "properties": {
            "data": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"type": {"enum": ["tags"]}, "attributes": {"properties": {"name": STRING}}},
                },
            }
        },
    },
    "application/vnd.api+json",
)


def _refs(type_: str) -> dict[str, Any]:
    """`openapi_extra` for a to-many relationship document `{data: [{type, id}, ...]}`."""
    return raw_json(
        {
            "type": "object",
            "properties": {
                "data": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"type": {"enum": [type_]}, "id": STRING}},
                }
            },
        },
        "application/vnd.api+json",
    )


WORKSPACE_REFS = _refs("workspaces")
PROJECT_REFS = _refs("projects")
VARSET = document(
    "varsets",
    {"name": text(128), "description": text(512), "global": BOOL, "priority": BOOL},
    required=["name"],
)
TAG_BINDINGS = raw_json(
    {
        "type": "object",
        "properties": {
            "data": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "type": {"enum": ["tag-bindings"]},
                        "attributes": {"properties": {"key": STRING, "value": STRING}},
                    },
                },
            }
        },
    },
    "application/vnd.api+json",
)
LOCK = raw_json({"type": "object", "properties": {"reason": text(limits.LOCK_REASON_MAX)}}, required=False)
TOKEN = document("authentication-tokens", {"description": text(limits.DESCRIPTION_MAX)})
VARIABLE = document(
    "vars",
    {
        "key": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}$"},
        "value": STRING,
        "description": text(limits.VARIABLE_DESCRIPTION_MAX),
        "category": {"type": "string", "enum": ["terraform", "env"]},
        "hcl": BOOL,
        "sensitive": BOOL,
    },
    required=["key", "category"],
)
CONFIGURATION_VERSION = document(
    "configuration-versions", {"auto-queue-runs": BOOL, "speculative": BOOL, "provisional": BOOL}
)
RUN = document(
    "runs",
    {
        "message": text(limits.RUN_MESSAGE_MAX),
        "is-destroy": BOOL,
        "refresh": BOOL,
        "refresh-only": BOOL,
        "plan-only": BOOL,
        "auto-apply": BOOL,
        "target-addrs": {"type": "array", "items": STRING},
        "invoke-action-addrs": {"type": "array", "items": STRING},
        "variables": {
            "type": "array",
            "items": {"type": "object", "properties": {"key": STRING, "value": STRING}, "required": ["key", "value"]},
        },
    },
    {"workspace": "workspaces", "configuration-version": "configuration-versions"},
)
RUN_ACTION = raw_json({"type": "object", "properties": {"comment": STRING}}, required=False)
COMMENT = document("comments", {"body": text(limits.RUN_MESSAGE_MAX)}, required=["body"])
STATE_VERSION = document(
    "state-versions",
    {
        "serial": {"type": "integer", "minimum": 0},
        "md5": text(32),
        "lineage": text(limits.LINEAGE_MAX),
        "state": STRING,
        "json-state-outputs": STRING,
        "force": BOOL,
    },
    {"run": "runs"},
    required=["serial", "md5"],
)
ROLLBACK = document("state-versions", {}, {"rollback-state-version": "state-versions"})
STATE_FILE = raw_json(
    {
        "type": "object",
        "properties": {
            "version": {"type": "integer"},
            "serial": {"type": "integer"},
            "lineage": STRING,
            "terraform_version": STRING,
            "outputs": {"type": "object"},
            "resources": {"type": "array"},
        },
        "required": ["serial", "lineage"],
    }
)
LOCK_INFO = raw_json(
    {
        "type": "object",
        "properties": dict.fromkeys(("ID", "Operation", "Info", "Who", "Version", "Created", "Path"), STRING),
        "required": ["ID"],
    }
)
UNLOCK_INFO = raw_json(LOCK_INFO["requestBody"]["content"]["application/json"]["schema"], required=False)
SSH_KEY = document("ssh-keys", {"name": text(255), "value": text(4096)}, required=["name", "value"])
SSH_KEY_UPDATE = document("ssh-keys", {"name": text(255), "value": text(4096)})
SSH_KEY_ASSIGNMENT = document("workspaces", {"id": {"type": ["string", "null"]}})
RUN_TRIGGER = document("run-triggers", {}, {"sourceable": "workspaces"})
OVERRIDE = raw_json({"type": "object", "properties": {"comment": text(limits.RUN_MESSAGE_MAX)}}, required=False)
