"""The site admin's view of the whole installation: organizations, workspaces and runs of every organization.

Every method first asks `Authorizer.require_site_admin`: to anyone else the admin API does not exist (404).
Lists walk organizations -> workspaces (-> runs), one query per organization and per workspace: an
operator's tool, not a hot path.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from terrace.domain import clock, entitlements
from terrace.domain import runs as rs
from terrace.domain.entitlements import FeatureSet
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Authorizer
from terrace.services.access.organizations import OrganizationService
from terrace.services.runs.scheduler import RunScheduler
from terrace.services.runs.store import RunStore, retrying
from terrace.services.workspaces.workspaces import WorkspaceService

BOOL_SETTINGS = (
    "access-beta-tools",
    "global-module-sharing",
    "global-provider-sharing",
    "is-disabled",
    "terraform-worker-sudo-enabled",
)
TIMEOUT_SETTINGS = ("terraform-build-worker-apply-timeout", "terraform-build-worker-plan-timeout")
# TFE's newer names of the same two timeouts (go-tfe v1.109 sends both)
TIMEOUT_ALIASES = {"apply-timeout": TIMEOUT_SETTINGS[0], "plan-timeout": TIMEOUT_SETTINGS[1]}
TIMEOUT_RE = re.compile(r"^(\d+h)?(\d+m)?(\d+s)?\Z")
RUN_SORTS = {"created-at", "-created-at"}


def _timeout(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value or not TIMEOUT_RE.match(value):
        raise Invalid(f"{key} must be a duration such as 2h or 90m", pointer=f"/data/attributes/{key}")
    return value


def _moment(value: str | None, param: str) -> datetime | None:
    """A run list's time filter (an RFC 3339 time; one without a zone is UTC), or None when not given."""
    if value in (None, ""):
        return None
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError as exc:
        raise Invalid(f"{param} must be an RFC 3339 time", pointer=f"/{param}") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _between(created_at: str, after: datetime | None, before: datetime | None) -> bool:
    if after is None and before is None:
        return True
    moment = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    return (after is None or moment >= after) and (before is None or moment <= before)


def org_settings(attrs: dict[str, Any]) -> dict[str, Any]:
    """The admin-only organization settings in `attrs`, checked; other attributes are ignored."""
    values: dict[str, Any] = {}
    for key in BOOL_SETTINGS:
        if key in attrs and attrs[key] is not None:
            if not isinstance(attrs[key], bool):
                raise Invalid(f"{key} must be true or false", pointer=f"/data/attributes/{key}")
            values[key] = attrs[key]
    for key in (*TIMEOUT_ALIASES, *TIMEOUT_SETTINGS):  # the older name wins when both are sent
        if key in attrs and attrs[key] is not None:
            values[TIMEOUT_ALIASES.get(key, key)] = _timeout(key, attrs[key])
    if "workspace-limit" in attrs:
        limit = attrs["workspace-limit"]
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit < 2**31):
            raise Invalid("workspace-limit must be a count or null", pointer="/data/attributes/workspace-limit")
        values["workspace-limit"] = limit
    return values


class SiteAdminService:
    def __init__(
        self,
        authz: Authorizer,
        organizations: OrganizationService,
        workspaces: WorkspaceService,
        store: RunStore,
        scheduler: RunScheduler,
    ) -> None:
        self._authz = authz
        self._orgs = organizations
        self._workspaces = workspaces
        self._store = store
        self._scheduler = scheduler

    # organizations -----------------------------------------------------------------------
    def organizations(self, principal: Principal, query: str = "") -> list[Organization]:
        self._authz.require_site_admin(principal)
        needle = query.lower()
        return [o for o in self._orgs.all() if not needle or needle in o.name.lower() or needle in o.email.lower()]

    def organization(self, principal: Principal, name: str) -> Organization:
        self._authz.require_site_admin(principal)
        return self._orgs.lookup(name)

    def update_organization(self, principal: Principal, name: str, attrs: dict[str, Any]) -> Organization:
        self.organization(principal, name)
        return self._orgs.set_settings(name, org_settings(attrs))

    def feature_sets(self, principal: Principal, query: str) -> list[FeatureSet]:
        self._authz.require_site_admin(principal)
        return entitlements.search(query)

    def set_feature_set(self, principal: Principal, name: str, feature_set_id: Any) -> tuple[Organization, FeatureSet]:
        """Put the organization on a feature set (`domain/entitlements.py`): what it withholds stops at once."""
        self.organization(principal, name)
        feature_set = entitlements.by_id(feature_set_id)
        if feature_set is None:
            raise Invalid("relationships.feature-set must name one of GET /admin/feature-sets",
                          pointer="/data/relationships/feature-set")  # fmt: skip
        return self._orgs.set_settings(name, {entitlements.SETTING: feature_set.id}), feature_set

    def set_module_consumers(self, principal: Principal, name: str, consumers: list[str]) -> Organization:
        """Share `name`'s private modules with exactly these organizations (turns global sharing off). Kept by
        storage key, so a consumer renamed later stays one and a new organization under its old name does not."""
        self.organization(principal, name)
        consumer_keys = {self._orgs.lookup(consumer).key for consumer in consumers}  # a 404 names a missing one
        return self._orgs.set_settings(
            name, {"module-consumers": sorted(consumer_keys), "global-module-sharing": False}
        )

    def module_consumers(self, principal: Principal, name: str) -> list[Organization]:
        org = self.organization(principal, name)
        found = []
        for consumer in org.settings.get("module-consumers", []):
            try:
                found.append(self._orgs.by_key(consumer))
            except NotFound:
                continue  # deleted since: no longer a consumer
        return found

    # workspaces --------------------------------------------------------------------------
    def workspaces(
        self, principal: Principal, query: str = "", run_statuses: frozenset[str] = frozenset()
    ) -> tuple[list[Workspace], dict[str, Run]]:
        """Every workspace whose name holds `query` (and whose current run is in `run_statuses`, when given),
        with the current runs, newest activity first."""
        self._authz.require_site_admin(principal)
        found = [
            ws for org in self._orgs.all() for ws in self._workspaces.list(principal, org.name, search=query or None)
        ]
        current = {
            r.workspace_id: r for r in self._store.load_many([w.latest_run_id for w in found if w.latest_run_id])
        }
        if run_statuses:
            found = [ws for ws in found if ws.id in current and current[ws.id].status in run_statuses]
        found.sort(key=lambda ws: (current[ws.id].created_at if ws.id in current else "", ws.created_at), reverse=True)
        return found, current

    def workspace(self, principal: Principal, workspace_id: str) -> Workspace:
        self._authz.require_site_admin(principal)
        return self._workspaces.load(workspace_id)

    # runs --------------------------------------------------------------------------------
    def runs(
        self,
        principal: Principal,
        query: str = "",
        statuses: frozenset[str] = frozenset(),
        created: tuple[str | None, str | None] = (None, None),
    ) -> list[Run]:
        """Every run, newest first; `query` matches a run id, workspace name or organization name; `created` is
        `filter[from]` and `filter[to]` (RFC 3339 times: runs created in between, both ends included)."""
        self._authz.require_site_admin(principal)
        after, before = (_moment(v, p) for v, p in zip(created, ("filter[from]", "filter[to]"), strict=True))
        needle = query.lower()
        found: list[Run] = []
        for org in self._orgs.all():
            for ws in self._workspaces.list(principal, org.name):
                names_match = not needle or needle in ws.name.lower() or needle in org.name.lower()
                for run in self._store.list_for_workspace(ws.id):
                    if (names_match or needle in run.id.lower()) and (not statuses or run.status in statuses):
                        if _between(run.created_at, after, before):
                            found.append(run)
        found.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        return found

    def workspaces_of(
        self, principal: Principal, runs: list[Run]
    ) -> list[tuple[Workspace, dict[str, bool], Organization]]:
        """The workspaces of `runs` (each once, by id), with the caller's permissions on each and its organization:
        what a run list includes (`include=workspace`)."""
        self._authz.require_site_admin(principal)
        found = [self._workspaces.load(i) for i in sorted({r.workspace_id for r in runs})]
        return [(ws, self._workspaces.permissions(principal, ws), self._orgs.by_key(ws.organization)) for ws in found]

    def organizations_of(self, principal: Principal, keys: set[str]) -> list[Organization]:
        """The organizations stored under `keys`, in the installation's order."""
        self._authz.require_site_admin(principal)
        return [org for org in self._orgs.all() if org.key in keys]

    def force_cancel(self, principal: Principal, run_id: str) -> Run:
        """End a run that is not final at once, whatever its state: its runner is told to kill terraform."""
        self._authz.require_site_admin(principal)

        def step() -> Run:
            run = self._store.load(run_id)
            if run.final:
                run.require(*rs.CANCELABLE, action="force-cancel (it has ended)")
            run.force_cancel_requested = True
            run.cancel_requested_at = run.cancel_requested_at or clock.epoch()
            for phase in (run.plan, run.apply):
                if not phase.final and phase.status != rs.P_PENDING:
                    phase.mark(rs.P_CANCELED, clock.now_iso())
            return self._scheduler.finish(run, run.version, rs.CANCELED)

        return retrying(step)
