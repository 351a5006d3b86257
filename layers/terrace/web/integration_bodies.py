"""OpenAPI request bodies of the integrations' endpoints (`bodies.py` has the rest, and how a body is described): the
private registry's modules, providers and GPG keys, run tasks and their results, notification configurations, and VCS
providers (OAuth clients and tokens)."""

from __future__ import annotations

from typing import Any

from terrace.web.bodies import BOOL, STRING, document, text

REGISTRY_MODULE = document(
    "registry-modules",
    {"name": text(64), "provider": text(64), "registry-name": text(16), "namespace": text(64)},
    required=["name", "provider"],
)
REGISTRY_MODULE_VERSION = document(
    "registry-module-versions", {"version": text(128), "commit-sha": text(128)}, required=["version"]
)
REGISTRY_PROVIDER = document(
    "registry-providers",
    {"name": text(64), "namespace": text(64), "registry-name": text(16)},
    required=["name", "namespace", "registry-name"],
)
REGISTRY_PROVIDER_VERSION = document(
    "registry-provider-versions",
    {"version": text(128), "key-id": text(64), "protocols": {"type": "array", "items": text(8), "maxItems": 8}},
    required=["version", "key-id"],
)
REGISTRY_PROVIDER_PLATFORM = document(
    "registry-provider-platforms",
    {"os": text(64), "arch": text(64), "shasum": text(128), "filename": text(255)},
    required=["os", "arch", "shasum", "filename"],
)
GPG_KEY = document("gpg-keys", {"namespace": text(64), "ascii-armor": text(256 * 1024)}, required=["namespace"])
GPG_KEY_UPDATE = document("gpg-keys", {"namespace": text(64)}, required=["namespace"])
RUN_TASK = document(
    "tasks",
    {
        "name": text(128),
        "url": text(2048),
        "description": text(2000),
        "category": {"type": "string", "enum": ["task"]},
        "hmac-key": text(1024),
        "enabled": BOOL,
    },
)
_STAGES = {"type": "string", "enum": ["pre_plan", "post_plan", "pre_apply"]}
WORKSPACE_TASK = document(
    "workspace-tasks",
    {
        "enforcement-level": {"type": "string", "enum": ["advisory", "mandatory"]},
        "stage": _STAGES,
        "stages": {"type": "array", "items": _STAGES},
    },
    {"task": "tasks"},
)
TASK_RESULT = document(
    "task-results",
    {"status": {"type": "string", "enum": ["running", "passed", "failed"]}, "message": text(2000), "url": text(2048)},
)
_USERS = {
    "type": "object",
    "properties": {
        "data": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"type": {"type": "string", "enum": ["users"]}, "id": STRING},
                "required": ["type", "id"],
            },
        }
    },
}
_NOTIFICATION_ATTRIBUTES = {
    "name": text(255),
    "destination-type": {"type": "string", "enum": ["generic", "slack", "microsoft-teams", "email"]},
    "enabled": BOOL,
    "url": text(2048),
    "token": text(1024),
    "triggers": {"type": "array", "items": STRING},
    "email-addresses": {"type": "array", "items": text(254)},
}


def _notification(required: list[str]) -> dict[str, Any]:
    body = document("notification-configurations", _NOTIFICATION_ATTRIBUTES, required=required)
    data = body["requestBody"]["content"]["application/vnd.api+json"]["schema"]["properties"]["data"]
    data["properties"]["relationships"] = {"type": "object", "properties": {"users": _USERS}}
    return body


NOTIFICATION_CONFIGURATION = _notification(["name", "destination-type", "enabled"])
NOTIFICATION_CONFIGURATION_UPDATE = _notification([])

_OAUTH_CLIENT_ATTRIBUTES: dict[str, Any] = {
    "name": text(255),
    "service-provider": {"type": "string", "maxLength": 64},
    "http-url": text(2048),
    "api-url": text(2048),
    "key": text(1024),
    "secret": text(4096),
    "rsa-public-key": text(8192),
    "private-key": text(4096),
    "oauth-token-string": text(4096),
    "organization-scoped": BOOL,
}
OAUTH_CLIENT = document(
    "oauth-clients", _OAUTH_CLIENT_ATTRIBUTES, {"agent-pool": "agent-pools"}, required=["service-provider"]
)
OAUTH_CLIENT_UPDATE = document("oauth-clients", _OAUTH_CLIENT_ATTRIBUTES)
OAUTH_TOKEN_UPDATE = document("oauth-tokens", {"ssh-key": text(4096)})
