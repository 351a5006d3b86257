"""Policy set versions (`POST /policy-sets/:id/versions`, `GET /policy-set-versions/:id`) and the bundle each
policy set is evaluated with.

A version is created `pending` with a single-use upload URL; its tarball's landing (`blob.landed` under
`UPLOAD_PREFIX`) reads it (`bundles.py`), compiles an OPA set's modules with the policy engine and leaves it
`ready` (the set's current version) or `errored` with the reason. The extracted modules are kept as one JSON
object under `BUNDLE_PREFIX` (outside the upload prefix: writing it notifies nothing).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.hcl_reader import HclReader
from terrace.adapters.policy_engine import PolicyEngine
from terrace.config import Settings
from terrace.domain import clock
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.policies import PolicySet, PolicySetVersion, VersionPolicy
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.policies.bundles import ARCHIVE_MAX_BYTES, Bundle, read_tarball
from terrace.services.policies.policies import PolicyService
from terrace.services.policies.policy_sets import PolicySetService
from terrace.services.policies.store import PolicyStore

UPLOAD_PREFIX = "policy-uploads/"
BUNDLE_PREFIX = "policy-bundles/"


class PolicySetVersionService:
    def __init__(
        self,
        store: PolicyStore,
        blobs: BlobStore,
        settings: Settings,
        policy_sets: PolicySetService,
        policies: PolicyService,
        engine: PolicyEngine,
        hcl: HclReader,
    ) -> None:
        self._store, self._blobs, self._settings = store, blobs, settings
        self._sets, self._policies, self._engine, self._hcl = policy_sets, policies, engine, hcl

    @staticmethod
    def _public(item: dict[str, Any]) -> PolicySetVersion:
        return PolicySetVersion(
            id=item["id"],
            policy_set_id=item["policy_set_id"],
            organization=item["organization"],
            source=item.get("source", "tfe-api"),
            status=item["status"],
            error=item.get("error"),
            error_message=item.get("error"),
            created_at=item["created_at"],
            updated_at=item["updated_at"],
            status_timestamps=dict(item.get("status_timestamps", {})),
            policies=tuple(VersionPolicy(**p) for p in item.get("policies", [])),
            blob_key=item["blob_key"],
            ingress=item.get("ingress"),
        )

    def create(self, principal: Principal, set_id: str) -> PolicySetVersion:
        ps = self._sets.get(principal, set_id, Action.MANAGE_POLICIES)
        return self._public(self._new(ps))

    def create_from_commit(
        self, ps: PolicySet, archive: bytes, source: str, ingress: dict[str, Any]
    ) -> PolicySetVersion:
        """A version of a VCS policy set from its repository's commit (the events worker: `services/workflows/
        vcs_sources.py`), `archive` being the policies path's files as a .tar.gz; read at once, as an upload's
        landing is (kept outside the upload prefix: writing it notifies nothing), and current when it is ready."""
        item = self._new(ps, source, ingress, BUNDLE_PREFIX)
        self._blobs.put(item["blob_key"], archive)
        return self._read(item)

    def _new(self, ps: PolicySet, source: str = "tfe-api", ingress: dict[str, Any] | None = None,
             prefix: str = UPLOAD_PREFIX) -> dict[str, Any]:  # fmt: skip
        now, version_id = clock.now_iso(), new_id("polsetver")
        item = {
            "id": version_id,
            "policy_set_id": ps.id,
            "organization": ps.organization,
            "kind": ps.kind,
            "source": source,
            "status": "pending",
            "created_at": now,
            "updated_at": now,
            "status_timestamps": {"pending-at": now},
            "blob_key": f"{prefix}{ps.id}/{version_id}.tar.gz",
            "version": 1,
        }
        if ingress is not None:
            item["ingress"] = ingress
        self._store.create_version(item)
        self._sets.record_version(ps.id, version_id, current=False)
        return item

    def get(self, principal: Principal, version_id: str) -> PolicySetVersion:
        item = self._store.version(version_id) if looks_like(version_id, "polsetver") else None
        try:
            if item is not None:
                self._sets.get(principal, item["policy_set_id"])
        except NotFound:
            item = None
        if item is None:
            raise NotFound(f"policy set version {version_id} not found")
        return self._public(item)

    def upload_url(self, principal: Principal, version: PolicySetVersion) -> str | None:
        """A pending version's single-use upload link, for a caller who may change its set (`manage-policies`:
        the creator's answer, the set's managers); anyone else who reads it gets none (a reader holding it could
        replace the set's policies before its owner uploads them)."""
        if version.status != "pending" or not self._sets.can_manage(principal, version.policy_set_id):
            return None
        return self._blobs.presign_put(version.blob_key, self._settings.presign_ttl_s)

    # the upload's landing (events worker) ----------------------------------------------------------
    def landed(self, key: str) -> PolicySetVersion | None:
        version_id = key.rsplit("/", 1)[-1].removesuffix(".tar.gz")
        item = self._store.version(version_id) if looks_like(version_id, "polsetver") else None
        if item is None or item["blob_key"] != key or item["status"] != "pending":
            return None
        return self._read(item)

    def _read(self, item: dict[str, Any]) -> PolicySetVersion:
        """Reads a pending version's tarball: `ready` (its set's current version) or `errored` with the reason."""
        key, version_id, now = item["blob_key"], item["id"], clock.now_iso()
        try:
            info = self._blobs.head(key)
            if info is None or info.size > ARCHIVE_MAX_BYTES:
                raise Invalid(f"a policy set version is at most {ARCHIVE_MAX_BYTES} bytes compressed")
            bundle = read_tarball(self._blobs.get(key), self._hcl)
            if item.get("kind") == "opa":
                _check_opa(bundle, self._engine)
        except Invalid as exc:
            item.update(status="errored", error=exc.detail, updated_at=now)
            item["status_timestamps"] = {**item["status_timestamps"], "errored-at": now}
            self._store.save_version(item)
            return self._public(item)
        bundle_key = f"{BUNDLE_PREFIX}{item['policy_set_id']}/{version_id}.json"
        self._blobs.put(bundle_key, json.dumps({"modules": bundle.modules, "data": bundle.data}).encode())
        item.update(status="ready", updated_at=now, bundle_key=bundle_key)
        item["policies"] = [asdict(p) for p in bundle.policies]
        item["status_timestamps"] = {**item["status_timestamps"], "ready-at": now}
        self._store.save_version(item)
        self._sets.record_version(item["policy_set_id"], version_id, current=True)
        return self._public(item)

    # what an evaluation runs ------------------------------------------------------------------------
    def bundle_of(self, ps: PolicySet) -> Bundle:
        """The set's current version's bundle, else its individually managed policies (those with content)."""
        if ps.current_version_id:
            item = self._store.version(ps.current_version_id)
            if item is not None and item.get("bundle_key"):
                stored = json.loads(self._blobs.get(item["bundle_key"]))
                policies = tuple(VersionPolicy(**p) for p in item.get("policies", []))
                return Bundle(modules=stored["modules"], data=stored.get("data", {}), policies=policies)
        modules: dict[str, str] = {}
        found: list[VersionPolicy] = []
        org = self._sets_org(ps)
        for policy in self._policies.in_organization(org, list(ps.policy_ids)) if org else []:
            text = self._policies.content(policy.id)
            if text is None or policy.query is None:
                continue
            modules[policy.enforce_path] = text
            found.append(VersionPolicy(policy.name, policy.query, policy.enforcement_level, policy.description))
        return Bundle(modules=modules, policies=tuple(found))

    def _sets_org(self, ps: PolicySet) -> Any:
        return self._sets.organization_of(ps)


def _check_opa(bundle: Bundle, engine: PolicyEngine) -> None:
    if not bundle.policies:
        raise Invalid("an OPA policy set version needs a policies.hcl naming at least one policy")
    if not bundle.modules:
        raise Invalid("an OPA policy set version needs at least one .rego file")
    error = engine.check(bundle.modules)
    if error:
        raise Invalid(f"the policies do not compile: {error}")
