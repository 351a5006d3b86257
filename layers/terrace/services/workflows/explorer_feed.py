"""Keeps the explorer's summaries fresh (`store_explorer.py`), on the events worker, from events Terrace
already publishes (subscribed in `wiring/state_services.py`):

- `state.indexed` (the state area indexed a workspace's new current version, whichever way it was written): the
  current state's terraform version and the providers of its resources, from the state version's record (no
  state is read again);
- `run.status_changed` to `applied`, or `planned_and_finished` of a run that could have applied (no changes): the
  run's configuration is the workspace's configuration in use. Its root module (the workspace's working
  directory) is read from the archive within `domain/bounded_tar.py`'s bounds; `.tf.json` files here (up to
  1 MiB in all), `.terraform/modules/modules.json` (the exact versions of the module calls, when the upload
  carries it), `.tf` files that name a module or `required_providers`, and `.terraform.lock.hcl`, by the HCL
  reader port (a bounded child process with an empty environment: tenant-supplied HCL is never parsed in this
  process). A module call's version is the one the run's own `terraform init` installed, as its runner reported
  it with the plan (`Run.installed_modules`, `domain/installed_modules.py`), else the archive's modules.json's,
  else its constraint (kept beside it). A configuration already summarized is not read again, unless the run
  reported installed versions (the same configuration run again may have installed newer ones).

Each handler recomputes from what is stored now, so a redelivered or late event writes the same summary. A
configuration it cannot read leaves the previous summary; it never fails the event.
"""

from __future__ import annotations

import json
import logging
import posixpath
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.hcl_reader import HclReader
from terrace.domain import runs as rs
from terrace.domain.bounded_tar import TarBounds, read_files
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.explorer import Use, provider_key
from terrace.domain.explorer_config import LOCK_FILE, RELEVANT, configuration_uses, installed_modules, json_blocks
from terrace.domain.installed_modules import root_versions
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.store import RunStore
from terrace.services.state.store import StateStore
from terrace.services.workflows.store_explorer import ExplorerStore
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger(__name__)

ARCHIVE_MAX_BYTES = 50 * 1024 * 1024  # a larger configuration is not summarized
BOUNDS = TarBounds("a configuration version", ARCHIVE_MAX_BYTES, files_max=20_000, total_max=256 * 1024 * 1024)
FILE_MAX_BYTES = 512 * 1024  # a root file larger than this is not read for the explorer
JSON_MAX_BYTES = 1024 * 1024  # `.tf.json` read in this process (plain JSON), per configuration
MODULES_MANIFEST = ".terraform/modules/modules.json"  # the module versions `terraform init` installed


class ExplorerFeed:
    def __init__(
        self,
        store: ExplorerStore,
        workspaces: WorkspaceService,
        state_store: StateStore,
        run_store: RunStore,
        configuration_versions: ConfigurationVersionService,
        blobs: BlobStore,
        hcl: HclReader,
    ) -> None:
        self._store, self._workspaces, self._state = store, workspaces, state_store
        self._runs, self._configurations, self._blobs, self._hcl = run_store, configuration_versions, blobs, hcl

    def on_state_indexed(self, event: dict[str, Any]) -> None:
        try:
            ws = self._workspaces.load(str(event.get("workspace_id", "")))
        except NotFound:
            return
        sv = self._state.find(ws.current_state_version_id or "")
        if sv is None:
            return
        providers = [provider_key(str(p)) for p in (sv.summary or {}).get("providers") or {} if p]
        self._store.record_state(ws.organization, ws.id, sv.id, sv.terraform_version, providers)

    def on_run_status(self, event: dict[str, Any]) -> None:
        if event.get("to") not in (rs.APPLIED, rs.PLANNED_AND_FINISHED):
            return
        try:
            run = self._runs.load(str(event.get("run_id", "")))
            ws = self._workspaces.load(run.workspace_id)
            cv = self._configurations.load(run.configuration_version_id or "")
        except NotFound:
            return
        if run.assessment or run.plan_only or run.refresh_only or run.is_destroy or cv.speculative:
            return
        installed = root_versions(run.installed_modules)  # what the run's own init installed, when reported
        known = self._store.summary(ws.organization, ws.id)
        if known is not None and known.configuration_version_id == cv.id and not installed:
            return
        if cv.size is not None and cv.size > ARCHIVE_MAX_BYTES:
            return
        try:
            raw = self._blobs.get(cv.blob_key)
            modules, providers = self.read_configuration(raw, ws.working_directory, installed)
        except (NotFound, Invalid) as exc:  # gone, or not an archive within the bounds: the summary stays
            log.info("explorer: configuration %s not summarized: %s", cv.id, exc)
            return
        except Exception:  # derived data: the event's other handlers (and its redelivery) never wait on it
            log.exception("explorer: configuration %s not summarized", cv.id)
            return
        self._store.record_configuration(ws.organization, ws.id, cv.id, modules, providers)

    def read_configuration(
        self, raw: bytes, working_directory: str, reported: dict[str, str] | None = None
    ) -> tuple[tuple[Use, ...], tuple[Use, ...]]:
        """The configuration's module calls and providers; a call's version is the one its run's init installed
        (`reported`), else the one the archive's modules.json names, else its constraint."""
        root = posixpath.normpath(working_directory.strip("/")) if working_directory.strip("/") else ""

        manifest = posixpath.join(root, MODULES_MANIFEST)

        def wanted(name: str) -> bool:
            folder, base = posixpath.split(name)
            return name == manifest or folder == root and (base.endswith((".tf", ".tf.json")) or base == LOCK_FILE)

        files = read_files(raw, BOUNDS, "/configuration", wanted)
        documents: dict[str, dict[str, Any]] = {}
        texts: dict[str, str] = {}
        installed: dict[str, str] = {}
        json_left = JSON_MAX_BYTES
        for name in sorted(files):
            body = files[name]
            if name == manifest:
                if len(body) <= JSON_MAX_BYTES:
                    installed = _installed(body)
                continue
            if len(body) > FILE_MAX_BYTES or (name.endswith(".json") and len(body) > json_left):
                continue
            try:
                text = body.decode("utf-8")
                if name.endswith(".json"):
                    json_left -= len(body)
                    documents[name] = json_blocks(json.loads(text))
                elif name.endswith(LOCK_FILE) or any(word in text for word in RELEVANT):
                    texts[name] = text
            except (ValueError, RecursionError):  # not UTF-8, not JSON, nested past reason: it tells nothing
                continue
        if texts:
            documents.update(self._hcl.parse(texts).documents)
        return configuration_uses(documents, {**installed, **(reported or {})})


def _installed(body: bytes) -> dict[str, str]:
    try:
        return installed_modules(json.loads(body.decode("utf-8")))
    except (ValueError, RecursionError):  # not JSON: the configuration's constraints stand
        return {}
