"""The fixed documents of Terrace's SCIM service (RFC 7643 sections 5-7): ServiceProviderConfig, ResourceTypes
and Schemas, as `/scim/v2` serves them."""

from __future__ import annotations

from typing import Any

from terrace.domain import scim

SPC = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
RESOURCE_TYPE = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Schema"


def service_provider_config(base: str) -> dict[str, Any]:
    return {
        "schemas": [SPC],
        "documentationUri": "https://www.rfc-editor.org/rfc/rfc7644",
        "patch": {"supported": True},
        "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": True, "maxResults": scim.COUNT_MAX},
        "changePassword": {"supported": False},
        "sort": {"supported": False},
        "etag": {"supported": True},
        "authenticationSchemes": [
            {
                "type": "oauthbearertoken",
                "name": "OAuth Bearer Token",
                "primary": True,
                "description": "A SCIM token a site admin creates (admin/scim-tokens)",
            },
        ],  # fmt: skip
        "meta": {"resourceType": "ServiceProviderConfig", "location": f"{base}/scim/v2/ServiceProviderConfig"},
    }


def _attribute(name: str, kind: str = "string", **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "multiValued": False, "required": False, "caseExact": False,
            "mutability": "readWrite", "returned": "default", "uniqueness": "none", **extra}  # fmt: skip


def _multi(name: str, subs: list[dict[str, Any]]) -> dict[str, Any]:
    return _attribute(name, "complex", multiValued=True, subAttributes=subs)


USER_SCHEMA = {
    "id": scim.USER, "name": "User", "description": "User Account",
    "attributes": [
        _attribute("userName", required=True, uniqueness="server"),
        _attribute("name", "complex", subAttributes=[_attribute("formatted"), _attribute("familyName"),
                                                     _attribute("givenName")]),
        _attribute("displayName"), _attribute("nickName"), _attribute("title"), _attribute("locale"),
        _attribute("externalId", caseExact=True),
        _attribute("active", "boolean"),
        _multi("emails", [_attribute("value"), _attribute("type"), _attribute("primary", "boolean")]),
    ],
}  # fmt: skip
GROUP_SCHEMA = {
    "id": scim.GROUP, "name": "Group", "description": "Group",
    "attributes": [
        _attribute("displayName", required=True, uniqueness="server"),
        _attribute("externalId", caseExact=True),
        _multi("members", [_attribute("value", mutability="immutable"), _attribute("display"),
                           _attribute("$ref", "reference", referenceTypes=["User"])]),
    ],
}  # fmt: skip


def schemas(base: str) -> list[dict[str, Any]]:
    return [
        {**s, "schemas": [SCHEMA], "meta": {"resourceType": "Schema", "location": f"{base}/scim/v2/Schemas/{s['id']}"}}
        for s in (USER_SCHEMA, GROUP_SCHEMA)
    ]


def resource_types(base: str) -> list[dict[str, Any]]:
    return [
        {"schemas": [RESOURCE_TYPE], "id": name, "name": name, "endpoint": f"/{name}s", "schema": schema,
         "meta": {"resourceType": "ResourceType", "location": f"{base}/scim/v2/ResourceTypes/{name}"}}
        for name, schema in (("User", scim.USER), ("Group", scim.GROUP))
    ]  # fmt: skip
