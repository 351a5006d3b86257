"""State versions, their outputs and indexed resources -> JSON:API resources (HCP Terraform attribute names)."""

from __future__ import annotations

import re
from typing import Any

from terrace.domain.state_index import IndexedResource, StoredOutput
from terrace.domain.state_versions import DATA_DELETED, DATA_PRESENT, DATA_SOFT_DELETED, FINALIZED, StateVersion
from terrace.web.jsonapi import ref, refs, resource

# TFE's statuses of a version whose backing data is not present
BACKING_DATA_STATUS = {
    DATA_SOFT_DELETED: "backing_data_soft_deleted",
    DATA_DELETED: "backing_data_permanently_deleted",
}


def state_version(
    sv: StateVersion, base_url: str, upload_urls: tuple[str | None, str | None, str | None]
) -> dict[str, Any]:
    """`upload_urls`: the state's, the JSON state's and a Hold Your Own Key version's sanitized state's (only in the
    answer that creates a pending version)."""
    finalized = sv.status == FINALIZED and sv.backing_data == DATA_PRESENT
    download = f"{base_url}/api/v2/state-versions/{sv.id}/download" if finalized else None
    json_download = (
        f"{base_url}/api/v2/state-versions/{sv.id}/json-download" if finalized and sv.has_json_state else None
    )
    attributes: dict[str, Any] = {
        "created-at": sv.created_at,
        "serial": sv.serial,
        "lineage": sv.lineage,
        "md5": sv.md5,
        "size": sv.size,
        "status": sv.status if sv.backing_data == DATA_PRESENT else BACKING_DATA_STATUS[sv.backing_data],
        "hosted-state-download-url": download,
        "hosted-json-state-download-url": json_download,
        "hosted-state-upload-url": upload_urls[0],
        "hosted-json-state-upload-url": upload_urls[1],
        "resources-processed": sv.resources_processed,
        "state-version": sv.format_version if finalized else None,
        "terraform-version": sv.terraform_version or None,
        "modules": sv.summary.get("modules") if finalized else None,
        "providers": sv.summary.get("providers") if finalized else None,
        "resources": sv.summary.get("resources") if finalized else None,
        "intermediate": False,
        "vcs-commit-sha": None,
        "vcs-commit-url": None,
        "billable-rum-count": None,
    }
    if sv.hyok_data_key_id:  # Hold Your Own Key: the state is the agent's ciphertext; the server reads the sanitized
        attributes["encrypted-state-download-url"] = download
        attributes["sanitized-state-download-url"] = (
            f"{base_url}/api/v2/state-versions/{sv.id}/sanitized-download" if finalized else None
        )
        attributes["sanitized-state-upload-url"] = upload_urls[2]
    if sv.error:
        attributes["error"] = sv.error
    if sv.index_error:
        attributes["index-error"] = sv.index_error
    relationships = {
        "workspace": ref("workspaces", sv.workspace_id),
        "run": ref("runs", sv.run_id),
        "created-by": ref("users", sv.created_by),
        "outputs": refs("state-version-outputs", list(sv.output_ids)),
    }
    if sv.hyok_data_key_id:
        relationships["hyok-encrypted-data-key"] = ref("hyok-encrypted-data-keys", sv.hyok_data_key_id)
    return resource(
        "state-versions", sv.id, attributes, relationships, links={"self": f"/api/v2/state-versions/{sv.id}"}
    )


def output(out: StoredOutput, *, reveal: bool) -> dict[str, Any]:
    return resource(
        "state-version-outputs",
        out.id,
        {
            "name": out.name,
            "sensitive": out.sensitive,
            "type": out.type,
            "value": out.value if reveal or not out.sensitive else None,
            "detailed-type": out.detailed_type,
        },
        links={"self": f"/api/v2/state-version-outputs/{out.id}"},
    )


_MODULE_STEP = re.compile(r"(^|\.)module\.(?=[A-Za-z_][A-Za-z0-9_-]*(\[[^\]]*\])?\.)")


def hcp_module_path(text: str) -> str:
    """HCP's shape of a module path in `/workspaces/:id/resources`: without the `module.` steps
    (`module.media_bucket.aws_s3_bucket.this[0]` -> `media_bucket.aws_s3_bucket.this[0]`; the module `media_bucket`)."""
    return _MODULE_STEP.sub(r"\1", text + ".")[:-1] if text.startswith("module.") else text


def indexed_resource(res: IndexedResource, *, with_workspace: bool = False) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "address": res.address if with_workspace else hcp_module_path(res.address),
        "name": res.name,
        "created-at": res.created_at,
        "updated-at": res.updated_at,
        "module": res.module if with_workspace else hcp_module_path(res.module),
        "provider": res.provider,
        "provider-type": res.type,
        "modified-by-state-version-id": res.modified_by,
        "name-index": res.name_index,
    }
    relationships: dict[str, Any] | None = None
    if with_workspace:
        attributes["workspace-name"] = res.workspace_name
        attributes["ids"] = list(res.ids)
        relationships = {"workspace": ref("workspaces", res.workspace_id)}
    return resource("resources", f"{res.workspace_id}/{res.address}", attributes, relationships)
