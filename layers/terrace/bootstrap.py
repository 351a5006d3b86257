"""The one composition root: builds the container of services for AWS, local mode and tests.

Local mode and AWS differ only in where the boto3 clients point (moto server vs AWS); unit tests
swap the adapters for in-memory twins. The services are the same objects in every case.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import Table
from terrace.config import Settings
from terrace.services.accounts import AccountService
from terrace.services.authz import Authorizer
from terrace.services.locking import LockService
from terrace.services.organizations import OrganizationService
from terrace.services.state_index import StateIndex
from terrace.services.state_versions import StateVersionService
from terrace.services.workspaces import WorkspaceService


@dataclass
class Container:
    settings: Settings
    table: Table
    blobs: BlobStore

    @cached_property
    def authz(self) -> Authorizer:
        return Authorizer()

    @cached_property
    def accounts(self) -> AccountService:
        return AccountService(self.table)

    @cached_property
    def organizations(self) -> OrganizationService:
        return OrganizationService(self.table, self.authz)

    @cached_property
    def workspaces(self) -> WorkspaceService:
        return WorkspaceService(self.table, self.authz, self.organizations)

    @cached_property
    def locks(self) -> LockService:
        return LockService(self.workspaces, unlock_checks=[self.state_versions.ensure_not_pending])

    @cached_property
    def state_index(self) -> StateIndex:
        return StateIndex(self.table, self.blobs)

    @cached_property
    def state_versions(self) -> StateVersionService:
        return StateVersionService(self.table, self.blobs, self.settings, self.workspaces, self.state_index,
                                   self.organizations)


def boto_clients(settings: Settings) -> dict[str, Any]:
    """boto3 clients, created once per process (cold start matters on Lambda)."""
    import boto3
    from botocore.config import Config

    session = boto3.session.Session(region_name=settings.region)
    common: dict[str, Any] = {"endpoint_url": settings.aws_endpoint_url} if settings.aws_endpoint_url else {}
    s3_config = Config(signature_version="s3v4", s3={"addressing_style": "path"})
    retry = Config(retries={"max_attempts": 5, "mode": "adaptive"})
    return {
        "dynamodb": session.client("dynamodb", config=retry, **common),
        "s3": session.client("s3", config=s3_config, **common),
    }


def build_aws(settings: Settings) -> Container:
    """Wiring against real AWS or the moto server (same code; endpoint_url decides)."""
    from terrace.adapters.dynamo_table import DynamoTable
    from terrace.adapters.s3_blobs import S3Blobs

    clients = boto_clients(settings)
    return Container(
        settings=settings,
        table=DynamoTable(clients["dynamodb"], settings.table_name),
        blobs=S3Blobs(clients["s3"], settings.blob_bucket),
    )


def build_memory(settings: Settings | None = None) -> Container:
    """Wiring for unit tests: in-memory twins of every adapter."""
    from terrace.adapters.memory_blobs import MemoryBlobs
    from terrace.adapters.memory_table import MemoryTable

    settings = settings or Settings(table_name="memory", blob_bucket="memory", url_signing_secret="test-secret")
    return Container(settings=settings, table=MemoryTable(), blobs=MemoryBlobs())
