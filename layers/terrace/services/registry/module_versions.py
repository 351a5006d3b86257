"""Versions of a private registry module: publishing through the API and what terraform/tofu download.

`create` records a `pending` version and its upload URL (`module-uploads/<module>/object/<version id>.tar.gz`: the
path has `/object/`, as HCP Terraform's archivist links have and go-tfe checks; versions from before it have no
`object/`); the tarball's landing (`blob.landed`) reads it (`module_archive.py`) and leaves the version `ok`, or
`reg_ingress_failed` with the reason when it is too large or not a module. As on HCP Terraform, the link may be used
again until it expires (it is only ever handed to who may publish the module): each landing of a new tarball reads
it again and the version is what its last upload holds (`accepts_upload`; a repeated event of the same object
changes nothing). What the UI
shows of an `ok` version (README, inputs, outputs, resources) is kept as one JSON object under `DOCS_PREFIX`
(`store.py`; outside the upload prefix: writing it notifies nothing). Downloads are short-lived signed URLs of the
tarball as it was when it was read (its MD5 and size are checked first, `blob_records.require_recorded`).
"""

from __future__ import annotations

import builtins
import json
import logging
from collections.abc import Callable
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.hcl_reader import HclReader
from terrace.config import Settings
from terrace.domain import clock
from terrace.domain.errors import Conflict, Invalid, NotFound, TransitionNotAllowed
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.registry_modules import (
    PRIVATE,
    VERSION_FAILED,
    VERSION_OK,
    VERSION_PENDING,
    ModuleVersion,
    RegistryModule,
    check_deprecation,
    check_revocation,
    check_version,
    installable_by,
    is_version,
)
from terrace.services.access.authz import Action
from terrace.services.blob_records import md5_of, require_recorded
from terrace.services.optimistic import optimistic
from terrace.services.registry.module_archive import ARCHIVE_MAX_BYTES, read_module
from terrace.services.registry.modules import RegistryModuleService
from terrace.services.registry.store import ModuleStore, docs_key, version_of

log = logging.getLogger("terrace.registry")

UPLOAD_PREFIX = "module-uploads/"
OBJECT_PATH = "object/"  # module-uploads/<module>/object/<version id>.tar.gz
DOWNLOAD_TTL_S = 300  # an X-Terraform-Get URL: terraform fetches it at once


class ModuleVersionService:
    def __init__(
        self,
        store: ModuleStore,
        blobs: BlobStore,
        settings: Settings,
        modules: RegistryModuleService,
        hcl: HclReader,
        configuration_uploaded_at: Callable[[str], str | None] = lambda _run_id: None,
    ) -> None:
        """`configuration_uploaded_at`: when the configuration of a run (by id) was uploaded (None: no such run);
        the runs area's, filled by the composition root."""
        self._store, self._blobs, self._settings, self._modules = store, blobs, settings, modules
        self._hcl, self._configuration_uploaded_at = hcl, configuration_uploaded_at

    def of_module(self, module_id: str) -> builtins.list[ModuleVersion]:
        """A module's versions, newest first (semantic version order)."""
        return self._store.versions_of(module_id)

    def _private(
        self, principal: Principal, organization: str, address: tuple[str, str, str], action: Action
    ) -> RegistryModule:
        """The organization's private module at `address` (namespace, name, provider; the namespace is the
        organization's name)."""
        return self._modules.get(principal, organization, (PRIVATE, *address), action)

    # publishing ------------------------------------------------------------------------------------
    def create(
        self, principal: Principal, organization: str, address: tuple[str, str, str], attrs: dict[str, Any]
    ) -> tuple[RegistryModule, ModuleVersion]:
        module = self._private(principal, organization, address, Action.MANAGE_MODULES)
        version = check_version(attrs.get("version"))
        commit = attrs.get("commit-sha")
        if commit is not None and not isinstance(commit, str):
            raise Invalid("commit-sha must be a string", pointer="/data/attributes/commit-sha")
        now, version_id = clock.now_iso(), new_id("modver")
        created = ModuleVersion(
            id=version_id,
            module_id=module.id,
            version=version,
            status=VERSION_PENDING,
            created_at=now,
            updated_at=now,
            blob_key=f"{UPLOAD_PREFIX}{module.id}/{OBJECT_PATH}{version_id}.tar.gz",
        )
        if not self._store.create_version(created):
            raise Conflict(f"version {version} of {module.address} already exists")
        return module, created

    def publish(
        self, principal: Principal, organization: str, address: tuple[str, str, str], version: str, tarball: bytes
    ) -> ModuleVersion:
        """A version and its tarball at once (the UI's upload form): created, stored and read as an upload that
        landed is; the version is `ok`, or `reg_ingress_failed` with the reason."""
        if len(tarball) > ARCHIVE_MAX_BYTES:
            raise Invalid(f"a module version is at most {ARCHIVE_MAX_BYTES} bytes compressed", pointer="/tarball")
        if not tarball:
            raise Invalid("choose the module's .tar.gz to upload", pointer="/tarball")
        _, created = self.create(principal, organization, address, {"version": version})
        self._blobs.put(created.blob_key, tarball, "application/gzip")
        return self.landed(created.blob_key) or self._one(
            self._private(principal, organization, address, Action.READ_MODULES), created.version
        )

    def publish_commit(
        self, module: RegistryModule, version: str, archive: bytes, source: str, commit_sha: str
    ) -> ModuleVersion:
        """A version of a module published from a repository (a tag's or a commit's files as a .tar.gz, read from
        the forge by `services/workflows/vcs_modules.py`), read as an upload that landed is; Conflict when the
        module has that version already. The caller checked who may publish it."""
        version = check_version(version)
        if len(archive) > ARCHIVE_MAX_BYTES:
            raise Invalid(f"a module version is at most {ARCHIVE_MAX_BYTES} bytes compressed")
        now, version_id = clock.now_iso(), new_id("modver")
        created = ModuleVersion(id=version_id, module_id=module.id, version=version, status=VERSION_PENDING,
                                created_at=now, updated_at=now, source=source, commit_sha=commit_sha,
                                blob_key=f"{UPLOAD_PREFIX}{module.id}/{OBJECT_PATH}{version_id}.tar.gz")  # fmt: skip
        if not self._store.create_version(created):
            raise Conflict(f"version {version} of {module.address} already exists")
        self._blobs.put(created.blob_key, archive, "application/gzip")
        return self.landed(created.blob_key) or self._one(module, version)

    def read(
        self, principal: Principal, organization: str, address: tuple[str, str, str], version: str
    ) -> tuple[RegistryModule, ModuleVersion]:
        module = self._private(principal, organization, address, Action.READ_MODULES)
        return module, self._one(module, version)

    def _one(self, module: RegistryModule, version: str) -> ModuleVersion:
        found = self._store.version(module.id, version) if is_version(version) else None
        if found is None:
            raise NotFound(f"version {version} of registry module {module.address} not found")
        return found

    def upload_url(self, module: RegistryModule, version: ModuleVersion) -> str | None:
        """A pending version's single-use upload link, for a caller who may publish the module (`module` as read for
        the caller: `can_manage` is the Authorizer's `manage-modules`): the creator's answer, the module's managers.
        A reader, a run's token or anyone else gets none (holding it, they could publish their own tarball)."""
        if version.status != VERSION_PENDING or not module.can_manage:
            return None
        return self._blobs.presign_put(version.blob_key, self._settings.presign_ttl_s)

    def change_lifecycle(
        self,
        principal: Principal,
        organization: str,
        address: tuple[str, str, str],
        version: str,
        attrs: dict[str, Any],
    ) -> tuple[RegistryModule, ModuleVersion]:
        """Deprecates or revokes a version, or takes either back (`PATCH .../private/:ns/:name/:provider/:version`,
        `deprecation` and `revocation`): the registry protocol lists a deprecated version with its `deprecation`;
        a revoked one only a configuration from before its revocation installs (`installable_by`). A version is
        deprecated before it is revoked; taking a revocation back leaves it deprecated, as HCP Terraform does."""
        module = self._private(principal, organization, address, Action.MANAGE_MODULES)
        if "deprecation" not in attrs and "revocation" not in attrs:
            raise Invalid("deprecation or revocation is required", pointer="/data/attributes")
        deprecating = "deprecation" in attrs
        deprecation = check_deprecation(attrs["deprecation"]) if deprecating else None
        revoking = "revocation" in attrs
        revocation = check_revocation(attrs["revocation"]) if revoking else None
        found = self._one(module, version)
        now = clock.now_iso()

        def change(stored: ModuleVersion) -> tuple[dict[str, str] | None, dict[str, str] | None]:
            deprecated = deprecation if deprecating else stored.deprecation
            revoked = stored.revocation
            if revoking:  # revoked again: its message and link change, the time it was first revoked stays
                since = (stored.revocation or {}).get("revoked-at", now)
                revoked = {**revocation, "revoked-at": since} if revocation is not None else None
            if revoked is not None and deprecated is None:
                where = "deprecation" if deprecating else "revocation"
                raise Invalid("a version is deprecated before it is revoked, and stays deprecated while revoked "
                              "(revert its revocation first)", pointer=f"/data/attributes/{where}")  # fmt: skip
            return deprecated, revoked

        def step() -> ModuleVersion:
            return self._store.set_lifecycle(found, change, now)

        return module, optimistic(step, exhausted=f"version {version} changed concurrently; retry")

    def delete(self, principal: Principal, organization: str, address: tuple[str, str, str, str], version: str) -> None:
        """Deletes one version and its tarball (`DELETE .../:provider/:version`)."""
        module = self._modules.get(principal, organization, address, Action.MANAGE_MODULES)
        if module.registry_name != PRIVATE:
            raise NotFound(f"version {version} of registry module {module.address} not found")
        self._store.delete_version(self._one(module, version))  # (and its tarball)

    # the upload's landing (events worker) ---------------------------------------------------------
    def _uploaded_to(self, key: str) -> dict[str, Any] | None:
        """The item of the version whose tarball is `key`, or None when `key` is none's."""
        parts = key.split("/")
        if len(parts) == 4 and f"{parts[2]}/" == OBJECT_PATH:
            parts = [parts[0], parts[1], parts[3]]
        if len(parts) != 3 or f"{parts[0]}/" != UPLOAD_PREFIX or not looks_like(parts[1], "mod"):
            return None
        return self._store.uploaded_to(parts[1], key)

    def accepts_upload(self, key: str) -> bool:
        """Whether an upload URL's PUT may replace `key` (the embedded blob server asks; S3 takes any PUT of a link
        before it expires): a version's tarball, which its link may upload again as on HCP Terraform."""
        return self._uploaded_to(key) is not None

    def landed(self, key: str) -> ModuleVersion | None:
        """A tarball landed under `key`: a pending version's first one, or a new one through the same link (an
        `ok` version whose recorded MD5 differs, a failed one whose tarball was removed). A repeated event of an
        object already read changes nothing."""
        item = self._uploaded_to(key)
        if item is None:
            return None
        info = self._blobs.head(key)
        if info is None:
            return None
        current = version_of(item)
        if current.status == VERSION_OK and current.md5 == md5_of(info) and current.size == info.size:
            return None
        now = clock.now_iso()
        updated: dict[str, Any] = {"updated_at": now, "error": None}
        try:
            if info.size > ARCHIVE_MAX_BYTES:
                raise Invalid(f"a module version is at most {ARCHIVE_MAX_BYTES} bytes compressed")
            contents = read_module(self._blobs.get(key), self._hcl)
        except Invalid as exc:
            updated.update(status=VERSION_FAILED, error=exc.detail)
            self._blobs.delete(key)
        else:
            docs = {k: getattr(contents, k) for k in ("readme", "inputs", "outputs", "resources")}
            self._blobs.put(docs_key(version_of(item)), json.dumps(docs).encode(), "application/json")
            updated.update(status=VERSION_OK, size=info.size, md5=md5_of(info))
        return self._store.land(item, updated)  # None when another landing of the same upload decided first

    # what the UI shows -------------------------------------------------------------------------------
    def docs(self, version: ModuleVersion) -> dict[str, Any]:
        """README, inputs, outputs and resources of an `ok` version (empty for others)."""
        if version.status != VERSION_OK:
            return self.docs_of_nothing()
        try:
            return dict(json.loads(self._blobs.get(docs_key(version))))
        except (KeyError, FileNotFoundError, ValueError):
            return self.docs_of_nothing()

    def page(
        self, principal: Principal, organization: str, address: tuple[str, str, str], version: str | None
    ) -> tuple[RegistryModule, ModuleVersion | None, dict[str, Any]]:
        """The UI's module page: the module, the version shown (`version`, else the newest `ok` one) and its docs."""
        module = self._private(principal, organization, address, Action.READ_MODULES)
        shown = (
            self._one(module, version)
            if version
            else next((v for v in module.versions if v.status == VERSION_OK), None)
        )
        return module, shown, self.docs(shown) if shown else self.docs_of_nothing()

    @staticmethod
    def docs_of_nothing() -> dict[str, Any]:
        return {"readme": "", "inputs": [], "outputs": [], "resources": []}

    # the module registry protocol -----------------------------------------------------------------
    def available(self, principal: Principal, namespace: str, name: str, provider: str) -> builtins.list[ModuleVersion]:
        """`GET /api/registry/v1/modules/:namespace/:name/:provider/versions`: the versions one may install."""
        module = self._private(principal, namespace, (namespace, name, provider), Action.READ_MODULES)
        ok = [v for v in module.versions if v.status == VERSION_OK]
        if all(v.revocation is None for v in ok):
            return ok
        uploaded = self._uploaded_at(principal)
        return [v for v in ok if installable_by(v, uploaded)]  # a revoked one to existing configurations only

    def _uploaded_at(self, principal: Principal) -> str | None:
        """When the caller's configuration was uploaded: a run's (its token), else None (a new configuration)."""
        return self._configuration_uploaded_at(principal.subject_id) if principal.kind is PrincipalKind.RUN else None

    def download_url(self, principal: Principal, namespace: str, name: str, provider: str, version: str) -> str:
        module = self._private(principal, namespace, (namespace, name, provider), Action.READ_MODULES)
        found = self._one(module, version)
        if found.status != VERSION_OK:
            raise TransitionNotAllowed(f"version {version} of {module.address} is {found.status}, not ok")
        if not installable_by(found, self._uploaded_at(principal)):
            why = " ".join(filter(None, ((found.revocation or {}).get(k) for k in ("message", "link"))))
            raise NotFound(f"version {version} of {module.address} was revoked for new configurations: {why}")
        require_recorded(self._blobs, found.blob_key, found.md5, found.size, f"module {module.address} {version}")
        return self._blobs.presign_get(found.blob_key, min(DOWNLOAD_TTL_S, self._settings.presign_ttl_s))
