"""Configuration versions: an uploaded archive of terraform configuration, its status and backing data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PENDING, UPLOADED, ERRORED, ARCHIVED = "pending", "uploaded", "errored", "archived"

# Backing data (the uploaded archive): present, soft-deleted (restorable) or deleted for good.
DATA_PRESENT, DATA_SOFT_DELETED, DATA_DELETED = "present", "soft_deleted", "deleted"


@dataclass
class ConfigurationVersion:
    id: str
    workspace_id: str
    organization: str
    created_at: str
    status: str = PENDING
    speculative: bool = False
    provisional: bool = False
    auto_queue_runs: bool = True
    source: str = "tfe-api"
    size: int | None = None
    md5: str | None = None  # the uploaded archive's, recorded when it arrived (what downloads check)
    error_message: str | None = None
    created_by: str = ""
    may_apply: bool = True  # its creator could apply runs (the workspace's auto-apply applies its auto-queued run)
    # A run was created from it: its archive (md5, size) is final. Until then its upload URL may upload again, as
    # HCP Terraform's does (go-tfe uploads twice to one URL); from then on the embedded store refuses a PUT and
    # every read and run checks the archive against the record.
    sealed: bool = False
    backing_data: str = DATA_PRESENT
    version: int = 1
    status_timestamps: dict[str, str] = field(default_factory=dict)
    # from a forge (services/vcs/): what it was made of (HCP's ingress attributes: commit, branch, pull request...)
    ingress: dict[str, Any] | None = None
    untrusted: bool = False  # a fork's pull request: its runs get no sensitive variable

    @property
    def blob_key(self) -> str:
        return f"config/{self.workspace_id}/{self.id}.tar.gz"
