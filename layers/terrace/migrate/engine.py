"""The migration's order and its idempotent building block: find by name on the target, create, update or skip."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from terrace.migrate.client import Api, ApiError
from terrace.migrate.report import Report

ORG_SETTINGS = ("email", "default-execution-mode", "session-timeout", "session-remember", "collaborator-auth-policy")
WORKSPACE_SETTINGS = (
    "description",
    "execution-mode",
    "terraform-version",
    "working-directory",
    "auto-apply",
    "auto-apply-run-trigger",
    "global-remote-state",
    "queue-all-runs",
    "speculative-enabled",
    "allow-destroy-plan",
    "file-triggers-enabled",
    "trigger-prefixes",
    "assessments-enabled",
)
VARIABLE_FIELDS = ("description", "hcl")
REFUSALS = {400, 404, 409, 422}  # the target refuses one object: recorded, and the migration goes on


@dataclass
class Options:
    organization: str
    workspaces: str = "*"
    dry_run: bool = False
    state: str = "all"  # or "current"


@dataclass
class Ids:
    """Source id -> target id (None while a dry run would create it), and the source's names."""

    projects: dict[str, str | None] = field(default_factory=dict)
    workspaces: dict[str, str | None] = field(default_factory=dict)
    workspace_names: dict[str, str] = field(default_factory=dict)
    teams: dict[str, str | None] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # source project and team ids -> names
    target_pools: dict[str, str] | None = None  # the target's agent pools: name -> id
    # workspace name -> (its source SSH key id, its target id, the target's key id)
    ssh_keys: dict[str, tuple[str, str | None, str | None]] = field(default_factory=dict)


def changed(source: dict[str, Any], target: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The attributes among `keys` the source has and the target holds differently."""
    return {k: source[k] for k in keys if k in source and source[k] is not None and target.get(k) != source[k]}


class Migration:
    def __init__(self, source: Api, target: Api, options: Options, report: Report) -> None:
        self.source, self.target, self.options, self.report = source, target, options, report
        self.org = options.organization
        self.ids = Ids()
        self.target_org_exists = True

    # the building block ------------------------------------------------------------------------
    def sync(
        self,
        kind: str,
        name: str,
        wanted: dict[str, Any],
        existing: dict[str, Any] | None,
        create: Callable[[], dict[str, Any]],
        update: Callable[[str, dict[str, Any]], Any],
        keys: tuple[str, ...],
    ) -> str | None:
        """Create `name` if the target lacks it, else update the differing `keys`: the target's id, or None when a
        dry run would create it or the target refused it (recorded as a failure; the migration goes on)."""
        try:
            if existing is None:
                created = None if self.options.dry_run else str(create()["id"])
                self.report.record(kind, name, "create")
                return created
            diff = changed(wanted, existing.get("attributes") or {}, keys)
            if diff and not self.options.dry_run:
                update(existing["id"], diff)
            self.report.record(kind, name, "update" if diff else "skip", ", ".join(sorted(diff)))
            return str(existing["id"])
        except ApiError as exc:
            if exc.status not in REFUSALS:
                raise  # a bad token, an outage: stop here, a re-run resumes
            self.report.record(kind, name, "fail", str(exc))
            return None

    def failed(self, target_id: str | None) -> bool:
        """Whether a parent the target refused leaves its children nowhere to go (not so in a dry run)."""
        return target_id is None and not self.options.dry_run

    def write(self, method: str, path: str, body: Any = None) -> Any:
        """A write on the target; nothing in a dry run."""
        return None if self.options.dry_run else self.target.request(method, path, body)

    def target_list(
        self, path: str, parent_id: str | None, params: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """A target collection under a parent that may not exist yet (a dry run's create): empty then."""
        return [] if parent_id is None else self.target.pages(path, params)

    # the run ------------------------------------------------------------------------------------
    def run(self) -> None:
        from terrace.migrate import extras, states  # noqa: PLC0415 (the parts below build on this module)

        self.organization()
        self.projects()
        for ws in self.selected_workspaces():
            if ws["attributes"].get("locked"):
                self.report.warn(
                    f"workspace {ws['attributes']['name']} is locked on the source: skipped (re-run later)"
                )
                self.report.record("workspace", ws["attributes"]["name"], "skip", "locked on the source")
                continue
            target_id = self.workspace(ws)
            if self.failed(target_id):
                continue
            try:
                self.variables(ws, target_id)
                states.copy(self, ws, target_id)
            except ApiError as exc:
                self.report.record("workspace", ws["attributes"]["name"], "fail", str(exc))
                if exc.status not in REFUSALS:
                    raise
        extras.run(self)

    def organization(self) -> None:
        source = self.source.get(f"/organizations/{self.org}")
        if source is None:
            raise ApiError("source", "GET", f"/organizations/{self.org}", 404, "no such organization (or no access)")
        attrs = source["attributes"]
        existing = self.target.get(f"/organizations/{self.org}")
        self.target_org_exists = existing is not None

        def create() -> dict[str, Any]:
            body = {"name": self.org, "email": attrs.get("email")}
            created = self.target.request(
                "POST", "/organizations", {"data": {"type": "organizations", "attributes": body}}
            )
            self.update_org(self.org, changed(attrs, created["data"]["attributes"], ORG_SETTINGS))
            return dict(created["data"])

        found = self.sync("organization", self.org, attrs, existing, create, self.update_org, ORG_SETTINGS)
        if existing is None and self.failed(found):
            raise ApiError("target", "POST", "/organizations", 422, f"could not create {self.org}: see the report")
        self.target_org_exists = existing is not None or not self.options.dry_run

    def update_org(self, _id: str, diff: dict[str, Any]) -> None:
        if diff:
            body = {"data": {"type": "organizations", "attributes": diff}}
            self.target.request("PATCH", f"/organizations/{self.org}", body)

    def projects(self) -> None:
        existing = {
            p["attributes"]["name"]: p for p in self.target_list(f"/organizations/{self.org}/projects", self.org_id)
        }
        for project in self.source.pages(f"/organizations/{self.org}/projects"):
            attrs, name = project["attributes"], project["attributes"]["name"]
            self.ids.names[project["id"]] = name
            wanted = {"name": name, "description": attrs.get("description") or ""}

            def create(wanted: dict[str, Any] = wanted) -> dict[str, Any]:
                body = {"data": {"type": "projects", "attributes": wanted}}
                return dict(self.target.request("POST", f"/organizations/{self.org}/projects", body)["data"])

            def update(pid: str, diff: dict[str, Any]) -> None:
                self.target.request("PATCH", f"/projects/{pid}", {"data": {"type": "projects", "attributes": diff}})

            keys = ("description",) if "description" in attrs else ()
            self.ids.projects[project["id"]] = self.sync(
                "project", name, wanted, existing.get(name), create, update, keys
            )

    @property
    def org_id(self) -> str | None:
        """The target organization's name once it exists (None while a dry run would create it)."""
        return self.org if self.target_org_exists else None

    def selected_workspaces(self) -> list[dict[str, Any]]:
        found = self.source.pages(f"/organizations/{self.org}/workspaces")
        for ws in found:
            self.ids.workspace_names[ws["id"]] = ws["attributes"]["name"]
        chosen = [ws for ws in found if fnmatch.fnmatchcase(ws["attributes"]["name"], self.options.workspaces)]
        return sorted(chosen, key=lambda ws: str(ws["attributes"]["name"]))

    def workspace(self, ws: dict[str, Any]) -> str | None:
        from terrace.migrate.workspaces import workspace  # noqa: PLC0415 (it builds on this module)

        return workspace(self, ws)

    def variables(self, ws: dict[str, Any], target_id: str | None) -> None:
        name = ws["attributes"]["name"]
        self.sync_variables(
            f"workspace {name}",
            self.source.pages(f"/workspaces/{ws['id']}/vars"),
            self.target_list(f"/workspaces/{target_id}/vars", target_id),
            lambda: f"/workspaces/{target_id}/vars",
        )

    def sync_variables(
        self, owner: str, source: list[dict[str, Any]], target: list[dict[str, Any]], path: Callable[[], str]
    ) -> None:
        """Variables of a workspace or a variable set, matched by key and category."""
        existing = {(v["attributes"]["key"], v["attributes"]["category"]): v for v in target}
        for var in source:
            attrs = var["attributes"]
            key, category, sensitive = attrs["key"], attrs["category"], bool(attrs.get("sensitive"))
            label = f"{owner}: {key} ({category})"
            wanted = {k: attrs.get(k) for k in ("key", "category", "description", "hcl", "sensitive")}
            keys = (*VARIABLE_FIELDS, "sensitive") if sensitive else (*VARIABLE_FIELDS, "value")
            if not sensitive:
                wanted["value"] = attrs.get("value")
            else:
                self.report.must("sensitive variable", label, "set the value (no API reveals it)")
                wanted["value"] = ""

            def create(wanted: dict[str, Any] = wanted) -> dict[str, Any]:
                body = {"data": {"type": "vars", "attributes": wanted}}
                return dict(self.target.request("POST", path(), body)["data"])

            def update(vid: str, diff: dict[str, Any]) -> None:
                self.target.request(
                    "PATCH", f"{path()}/{vid}", {"data": {"type": "vars", "id": vid, "attributes": diff}}
                )

            self.sync("variable", label, wanted, existing.get((key, category)), create, update, keys)
