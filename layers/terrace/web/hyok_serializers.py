"""JSON:API documents of the HYOK area (HCP Terraform's shapes, as go-tfe reads them): OIDC configurations of four
types, HYOK configurations (their `oidc-configuration` is polymorphic: its type names the kind), customer key
versions and encrypted data keys."""

from __future__ import annotations

from typing import Any

from terrace.domain import hyok as model
from terrace.web.jsonapi import ref, refs, resource


def oidc_document(oidc: model.OidcConfiguration, organization: str) -> dict[str, Any]:
    kind = model.OIDC_KINDS[oidc.kind]
    attrs = {name: oidc.attributes.get(name) for name in kind.attributes}
    if oidc.kind == "vault":
        attrs["auth-path"] = oidc.attributes.get("auth-path") or "jwt"
    return resource(
        kind.type,
        oidc.id,
        attrs,
        {"organization": ref("organizations", organization)},
        links={"self": f"/api/v2/oidc-configurations/{oidc.id}"},
    )


def hyok_document(
    hyok: model.HyokConfiguration, organization: str, key_versions: list[model.KeyVersion]
) -> dict[str, Any]:
    return resource(
        "hyok-configurations",
        hyok.id,
        {
            "name": hyok.name,
            "kek-id": hyok.kek_id,
            "kms-options": dict(hyok.kms_options) or None,
            "primary": hyok.primary,
            "status": hyok.status,
            "error": hyok.error,
            "created-at": hyok.created_at,
        },
        {
            "organization": ref("organizations", organization),
            "oidc-configuration": ref(hyok.oidc_kind.type, hyok.oidc_configuration_id),
            "agent-pool": ref("agent-pools", hyok.agent_pool_id),
            "hyok-customer-key-versions": refs("hyok-customer-key-versions", [k.id for k in key_versions]),
        },
        links={"self": f"/api/v2/hyok-configurations/{hyok.id}"},
    )


def key_version_document(key: model.KeyVersion, data_key_ids: list[str] | None = None) -> dict[str, Any]:
    """`data_key_ids`: the data keys it wrapped, when the caller asked for one version."""
    relationships = {"hyok-configuration": ref("hyok-configurations", key.hyok_configuration_id)}
    if data_key_ids is not None:
        relationships["hyok-encrypted-data-keys"] = refs("hyok-encrypted-data-keys", data_key_ids)
    return resource(
        "hyok-customer-key-versions",
        key.id,
        {
            "key-version": key.key_version,
            "created-at": key.created_at,
            "status": key.status,
            "workspaces-secured": key.workspaces_secured,
            "error": key.error,
        },
        relationships,
        links={"self": f"/api/v2/hyok-customer-key-versions/{key.id}"},
    )


def data_key_document(data_key: model.EncryptedDataKey) -> dict[str, Any]:
    return resource(
        "hyok-encrypted-data-keys",
        data_key.id,
        {
            "encrypted-dek": data_key.encrypted_dek,
            "customer-key-name": data_key.customer_key_name,
            "created-at": data_key.created_at,
        },
        {"hyok-customer-key-versions": ref("hyok-customer-key-versions", data_key.key_version_id)},
        links={"self": f"/api/v2/hyok-encrypted-data-keys/{data_key.id}"},
    )
