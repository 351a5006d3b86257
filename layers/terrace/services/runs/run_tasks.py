"""An organization's run tasks (`/organizations/:org/tasks`, `/tasks/:id`) and their workspace attachments
(`/workspaces/:id/tasks`); `domain/run_tasks.py` holds the entities.

Managing tasks needs the organization's `manage-run-tasks` access (owners have it); any member may list and read
them (the HMAC key is write-only: encrypted, never shown). Attaching one to a workspace needs the workspace's
run-task management (workspace admins, a custom `run-tasks` grant, or `manage-run-tasks`). A task's URL follows the
destination rules (`domain/destinations.py`: a 422 naming `url`). Task names are unique in an organization.
"""

from __future__ import annotations

import builtins
from typing import Any

from terrace.adapters.encryptor import Encryptor
from terrace.domain import clock, entitlements, limits
from terrace.domain import run_tasks as model
from terrace.domain.destinations import Allowance, check_url
from terrace.domain.entitlements import GLOBAL_RUN_TASKS
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.run_tasks import RunTask, WorkspaceTask
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.runs.store import ConditionFailed
from terrace.services.runs.store_tasks import RunTaskStore
from terrace.services.workspaces.workspaces import WorkspaceService


class RunTaskService:
    def __init__(
        self,
        store: RunTaskStore,
        encryptor: Encryptor,
        organizations: OrganizationService,
        workspaces: WorkspaceService,
        allowance: Allowance,
    ) -> None:
        self._store, self._encryptor = store, encryptor
        self._orgs, self._workspaces, self._allowance = organizations, workspaces, allowance

    # organization tasks ------------------------------------------------------------------
    def load(self, task_id: str) -> RunTask | None:
        return self._store.find(task_id)

    def _task(self, principal: Principal, task_id: str, action: Action) -> tuple[RunTask, Organization]:
        task = self.load(task_id)
        if task is None:
            raise NotFound(f"run task {task_id} not found")
        try:
            org = self._orgs.get_by_key(principal, task.organization, Action.READ_ORGANIZATION)
        except NotFound as exc:
            raise NotFound(f"run task {task_id} not found") from exc
        if action is not Action.READ_ORGANIZATION:
            self._orgs.get_by_key(principal, task.organization, action)
        return task, org

    def list(self, principal: Principal, organization: str) -> tuple[str, builtins.list[RunTask]]:
        """The organization's name and its tasks, by name."""
        org = self._orgs.get(principal, organization)
        return org.name, self.of_organization(org.key)

    def of_organization(self, org_key: str) -> builtins.list[RunTask]:
        return self._store.of_organization(org_key)

    def get(self, principal: Principal, task_id: str) -> RunTask:
        return self._task(principal, task_id, Action.READ_ORGANIZATION)[0]

    def with_attachments(self, principal: Principal, task_id: str) -> tuple[RunTask, builtins.list[WorkspaceTask]]:
        """A task and its workspace attachments (those of workspaces the caller may read)."""
        task = self.get(principal, task_id)
        found = self._store.attachments_of_task(task.id)
        readable = {ws.id for ws in self._workspaces.allowed(principal, Action.READ_WORKSPACE, [
            self._workspaces.load(wt.workspace_id) for wt in found])}  # fmt: skip
        return task, sorted((wt for wt in found if wt.workspace_id in readable), key=lambda wt: wt.created_at)

    def global_tasks(self, org_key: str, stage: str) -> builtins.list[RunTask]:
        """The organization's enabled global tasks at `stage`, while it is entitled to them (one query; the
        organization is read only when one is global)."""
        found = [t for t in self.of_organization(org_key) if t.global_at(stage)]
        if found and not entitlements.entitled(self._orgs.by_key(org_key).settings, GLOBAL_RUN_TASKS):
            return []
        return found

    def organization_name(self, task: RunTask) -> str:
        return self._orgs.name_of(task.organization)

    def create(self, principal: Principal, organization: str, attrs: dict[str, Any]) -> RunTask:
        org = self._orgs.get(principal, organization, Action.MANAGE_RUN_TASKS)
        task = RunTask(
            id=new_id("task"),
            organization=org.key,
            name=self._name(attrs.get("name")),
            url=self._url(attrs.get("url")),
            created_at=clock.now_iso(),
        )
        self._apply(task, attrs, org)
        try:
            self._store.create(task)  # with the marker that its organization's runs' stages ask run tasks
        except ConditionFailed as exc:
            raise Invalid(f"a run task named {task.name} already exists", pointer="/data/attributes/name") from exc
        return task

    def update(self, principal: Principal, task_id: str, attrs: dict[str, Any]) -> RunTask:
        task, org = self._task(principal, task_id, Action.MANAGE_RUN_TASKS)
        old_name, expected = task.name, task.version
        if "name" in attrs:
            task.name = self._name(attrs.get("name"))
        if "url" in attrs:
            task.url = self._url(attrs.get("url"))
        self._apply(task, attrs, org)
        task.version = expected + 1
        try:
            self._store.replace(task, expected, old_name)
        except ConditionFailed as exc:
            if task.name.lower() != old_name.lower() and self._store.name_taken(task.organization, task.name):
                raise Invalid(f"a run task named {task.name} already exists", pointer="/data/attributes/name") from exc
            raise Conflict(f"run task {task_id} changed concurrently; retry") from exc
        return task

    def delete(self, principal: Principal, task_id: str) -> None:
        """Deletes the task and its workspace attachments (results already recorded stay)."""
        task, _ = self._task(principal, task_id, Action.MANAGE_RUN_TASKS)
        self._store.delete(task)

    def hmac_key(self, task: RunTask) -> str | None:
        """The task's HMAC key, to sign a delivery (never returned by the API)."""
        if not task.hmac_ciphertext:
            return None
        return self._encryptor.decrypt(task.hmac_ciphertext, {"organization": task.organization, "run-task": task.id})

    def _apply(self, task: RunTask, attrs: dict[str, Any], org: Organization) -> None:
        if attrs.get("global-configuration") is not None and entitlements.entitled(org.settings, GLOBAL_RUN_TASKS):
            # (an organization without the entitlement: ignored, as HCP ignores it)
            task.global_configuration = model.global_configuration(attrs["global-configuration"],
                                                                   task.global_configuration)  # fmt: skip
        if "description" in attrs:
            description = attrs.get("description")
            task.description = "" if description is None else limits.text(description, "description", 2000)
        if "category" in attrs and attrs.get("category") not in (None, model.CATEGORY):
            raise Invalid('category must be "task"', pointer="/data/attributes/category")
        if "enabled" in attrs and attrs.get("enabled") is not None:
            if not isinstance(attrs["enabled"], bool):
                raise Invalid("enabled must be true or false", pointer="/data/attributes/enabled")
            task.enabled = attrs["enabled"]
        if "hmac-key" in attrs:
            key = attrs.get("hmac-key")
            if key is None or key == "":
                task.hmac_ciphertext = None
            else:
                key = limits.text(key, "hmac-key", model.HMAC_KEY_MAX)
                context = {"organization": task.organization, "run-task": task.id}
                task.hmac_ciphertext = self._encryptor.encrypt(key, context)

    @staticmethod
    def _name(value: Any) -> str:
        name = limits.text(value, "name", model.NAME_MAX)
        if not name.strip():
            raise Invalid("name must not be blank", pointer="/data/attributes/name")
        return name

    def _url(self, value: Any) -> str:
        return check_url(value, "url", self._allowance).url

    # workspace attachments ---------------------------------------------------------------
    def attachments(self, principal: Principal, workspace_id: str) -> builtins.list[WorkspaceTask]:
        ws = self._workspaces.get(principal, workspace_id)
        return self.attached_to(ws.id)

    def attached_to(self, workspace_id: str) -> builtins.list[WorkspaceTask]:
        return self._store.attached_to(workspace_id)

    def attachment(self, principal: Principal, workspace_id: str, attachment_id: str) -> WorkspaceTask:
        ws = self._workspaces.get(principal, workspace_id)
        wt = self._store.attachment(attachment_id)
        if wt is None or wt.workspace_id != ws.id:
            raise NotFound(f"workspace run task {attachment_id} not found")
        return wt

    def workspace_view(self, principal: Principal, organization: str, name: str) -> dict[str, Any]:
        """The UI's workspace page: the workspace, its attachments with their tasks, the organization's tasks, and
        whether the caller may change them."""
        ws = self._workspaces.get_by_name(principal, organization, name)
        tasks = {t.id: t for t in self.of_organization(ws.organization)}
        attached = [(wt, tasks.get(wt.task_id)) for wt in self.attached_to(ws.id)]
        can = self._workspaces.can(principal, Action.MANAGE_WORKSPACE_RUN_TASKS, ws)
        return {"ws": ws, "attached": attached, "tasks": list(tasks.values()), "can_manage": can}

    def attach(self, principal: Principal, workspace_id: str, task_id: Any, attrs: dict[str, Any]) -> WorkspaceTask:
        ws = self._manageable(principal, workspace_id)
        if not isinstance(task_id, str):
            raise Invalid("a run task (relationships.task) is required", pointer="/data/relationships/task")
        task = self.load(task_id)
        if task is None or task.organization != ws.organization:
            raise NotFound(f"run task {task_id} not found")
        wt = WorkspaceTask(
            id=new_id("wstask"),
            organization=ws.organization,
            workspace_id=ws.id,
            task_id=task.id,
            enforcement_level=model.enforcement(attrs.get("enforcement-level")),
            stages=model.stages_of(attrs, ["post_plan"]) or ["post_plan"],
            created_at=clock.now_iso(),
        )
        try:
            self._store.attach(wt)
        except ConditionFailed as exc:
            raise Invalid(
                f"run task {task.id} is already attached to workspace {ws.id}", pointer="/data/relationships/task"
            ) from exc
        return wt

    def update_attachment(
        self, principal: Principal, workspace_id: str, attachment_id: str, attrs: dict[str, Any]
    ) -> WorkspaceTask:
        self._manageable(principal, workspace_id)
        wt = self.attachment(principal, workspace_id, attachment_id)
        expected = wt.version
        if attrs.get("enforcement-level") is not None:
            wt.enforcement_level = model.enforcement(attrs["enforcement-level"])
        wt.stages = model.stages_of(attrs, wt.stages) or wt.stages
        wt.version = expected + 1
        try:
            self._store.replace_attachment(wt, expected)
        except ConditionFailed as exc:
            raise Conflict(f"workspace run task {attachment_id} changed concurrently; retry") from exc
        return wt

    def detach(self, principal: Principal, workspace_id: str, attachment_id: str) -> None:
        self._manageable(principal, workspace_id)
        wt = self.attachment(principal, workspace_id, attachment_id)
        self._store.detach(wt)

    def _manageable(self, principal: Principal, workspace_id: str) -> Workspace:
        ws = self._workspaces.get(principal, workspace_id)
        self._workspaces.authorize(principal, Action.MANAGE_WORKSPACE_RUN_TASKS, ws)
        return ws

    def purge_workspace(self, workspace_id: str) -> None:
        """A deleted workspace's attachments (no permission check: the deletion workflow checked)."""
        for wt in self.attached_to(workspace_id):
            self._store.detach(wt)
