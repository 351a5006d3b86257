"""A run's plan JSON (`terraform show -json`), for whoever may read the run and its workspace's state."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.domain import runs as rs
from terrace.domain.errors import NotFound
from terrace.domain.jobs import FinishRequest
from terrace.domain.plan_json import hide_secrets, redact, redacted_copy_key, stored_plan_keys
from terrace.domain.principal import Principal
from terrace.domain.runs import PhaseState, Run, run_id_of
from terrace.services.access.authz import Action
from terrace.services.blob_records import md5_of, require_recorded
from terrace.services.runs.runs import RunService
from terrace.services.workspaces.variables import VariableService
from terrace.services.workspaces.workspaces import WorkspaceService


@dataclass(frozen=True)
class RedactedPlan:
    """json-output-redacted: the document, or (a large plan's) a presigned URL of its stored copy."""

    document: dict[str, Any] | None = None
    url: str | None = None


class PlanService:
    def __init__(
        self,
        runs: RunService,
        workspaces: WorkspaceService,
        variables: VariableService,
        blobs: BlobStore,
        redirect_bytes: int = 1024 * 1024,
    ) -> None:
        self._runs, self._workspaces, self._variables, self._blobs = runs, workspaces, variables, blobs
        self._redirect_bytes = redirect_bytes  # a Lambda answer holds 6 MB: larger documents come from storage

    def run_of(self, principal: Principal, phase_id: str, prefix: str) -> Run:
        """The run a plan-… or apply-… id belongs to (READ_RUNS)."""
        if not phase_id.startswith(prefix):
            raise NotFound(f"{phase_id} not found")
        try:
            return self._runs.get(principal, run_id_of(phase_id))
        except NotFound as exc:
            raise NotFound(f"{phase_id} not found") from exc

    def json_key(self, principal: Principal, plan_id: str) -> str:
        """The blob key of a finished plan's JSON; the caller must also be able to read the state."""
        return self._finished(principal, plan_id)[1]

    def json_url(self, principal: Principal, plan_id: str, ttl_s: int) -> str:
        """A presigned GET of a finished plan's JSON (json-output's redirect); as `json_key` checks."""
        return self._blobs.presign_get(self.json_key(principal, plan_id), ttl_s)

    def sanitized_url(self, principal: Principal, plan_id: str, ttl_s: int) -> str:
        """A Hold Your Own Key plan's sanitized JSON plan (HCP's `sanitized-plan`): the JSON plan the agent kept no
        value in; NotFound for a plan that is not sealed with a customer's key."""
        run, key = self._finished(principal, plan_id)
        if not run.plan.hyok_data_key_id:
            raise NotFound(f"plan {plan_id} has no sanitized plan (it is not encrypted with a customer key)")
        return self._blobs.presign_get(key, ttl_s)

    def finished_run(self, principal: Principal, plan_id: str) -> Run:
        """The run of a finished plan with a JSON, for whoever may read that JSON (as `json_key` checks)."""
        return self._finished(principal, plan_id)[0]

    def redacted_of(self, run: Run) -> dict[str, Any]:
        """The redacted JSON of `run`'s finished plan, for a worker whose request was checked (a plan export)."""
        if not run.plan.json_key:
            raise NotFound(f"plan {run.plan.id} has no JSON output")
        return self._redact(run, run.plan.json_key)

    def _finished(self, principal: Principal, plan_id: str) -> tuple[Run, str]:
        if not plan_id.startswith("plan-"):
            raise NotFound(f"{plan_id} not found")
        try:  # reads runs and state; a run task's access token reads its own run's only
            run = self._runs.get(principal, run_id_of(plan_id), Action.READ_PLAN_JSON)
        except NotFound as exc:
            raise NotFound(f"{plan_id} not found") from exc
        key = run.plan.json_key
        if run.plan.status != rs.P_FINISHED or not key or self._blobs.head(key) is None:
            raise NotFound(f"plan {plan_id} has no JSON output")
        if run.plan.json_md5 is not None:  # recorded by every finish since plans were recorded
            require_recorded(self._blobs, key, run.plan.json_md5, run.plan.json_size, f"JSON of plan {plan_id}")
        return run, key

    def redacted_output(self, principal: Principal, plan_id: str, ttl_s: int) -> RedactedPlan:
        """json-output-redacted: the plan JSON with sensitive values nulled (what terraform marks sensitive, the
        workspace's sensitive terraform variables, any string holding a sensitive value). A plan JSON above the
        redirect size was redacted when the plan finished (`record`): a presigned URL of that copy, as the http
        backend's state GET does, since a Lambda answer holds 6 MB."""
        run, key = self._finished(principal, plan_id)
        copy = redacted_copy_key(key)
        if (run.plan.json_size or 0) > self._redirect_bytes and self._blobs.head(copy) is not None:
            return RedactedPlan(url=self._blobs.presign_get(copy, ttl_s))
        return RedactedPlan(document=self._redact(run, key))

    def redacted(self, principal: Principal, plan_id: str) -> dict[str, Any]:
        """The redacted plan JSON itself (the run page's list of changes)."""
        run, key = self._finished(principal, plan_id)
        return self._redact(run, key)

    def _redact(self, run: Run, key: str) -> dict[str, Any]:
        plan = redact(json.loads(self._blobs.get(key)))
        sensitive = self._variables.sensitive_values_of(run)
        return hide_secrets(plan, sensitive.values, sensitive.terraform_keys)

    def _store_redacted(self, run: Run) -> None:
        """A plan JSON above the redirect size: its redacted document is stored now, json-output-redacted
        redirects to it (a read writes nothing)."""
        key = run.plan.json_key
        if not key or (run.plan.json_size or 0) <= self._redirect_bytes:
            return
        try:
            document = self._redact(run, key)
        except ValueError:
            return  # not JSON: json-output-redacted answers what it answered before
        self._blobs.put(redacted_copy_key(key), json.dumps(document).encode(), content_type="application/json")

    def hide_secrets_in_json(self, run: Run) -> None:
        """Defence in depth: the stored plan JSON (json-output) holds no sensitive variable value,
        whatever the runner uploaded."""
        key = run.plan.json_key
        sensitive = self._variables.sensitive_values_of(run)
        if not sensitive.values or not key or self._blobs.head(key) is None:
            return
        raw = self._blobs.get(key)
        try:
            plan = json.loads(raw)
        except ValueError:
            return
        if isinstance(plan, dict):
            hidden = json.dumps(hide_secrets(plan, sensitive.values, sensitive.terraform_keys)).encode()
            if hidden != raw:
                self._blobs.put(key, hidden, content_type="application/json")

    def keys_for_attempt(self, plan: PhaseState) -> tuple[str, str]:
        """The plan file and JSON keys of the plan's current attempt (the first's are `plans/<run>/plan.bin|json`);
        an earlier attempt's objects are deleted: nothing reads them, and no URL may create these twice."""
        for key in stored_plan_keys(plan.artifact_key, plan.json_key):
            self._blobs.delete(key)
        plan.artifact_md5 = plan.artifact_size = plan.json_md5 = plan.json_size = None
        run_id, suffix = run_id_of(plan.id), "" if plan.attempt <= 1 else f".{plan.attempt}"
        return f"plans/{run_id}/plan{suffix}.bin", f"plans/{run_id}/plan{suffix}.json"

    def record(self, run: Run, report: FinishRequest) -> None:
        """A plan finished: check the stored plan file and JSON against the MD5s the runner says it uploaded,
        hide secrets in the JSON, and record both objects' MD5 and size (what an apply and json-output check).
        Conflict when a stored object is not what the runner uploaded."""
        plan = run.plan
        for key, reported, what in (
            (plan.artifact_key, report.plan_md5, "plan file"),
            (plan.json_key, report.plan_json_md5, "plan JSON"),
        ):
            if key and reported:
                require_recorded(self._blobs, key, reported, None, f"{what} of {plan.id}")
        if plan.artifact_key and (info := self._blobs.head(plan.artifact_key)) is not None:
            plan.artifact_md5, plan.artifact_size = md5_of(info), info.size
        self.hide_secrets_in_json(run)
        if plan.json_key and (info := self._blobs.head(plan.json_key)) is not None:
            plan.json_md5, plan.json_size = md5_of(info), info.size
            self._store_redacted(run)

    def json_output(self, principal: Principal, plan_id: str) -> bytes:
        """A finished plan's JSON as json-output serves it (stored with its sensitive variable values hidden), for
        whoever json-output serves (`json_key`): the UI's download."""
        return self._blobs.get(self.json_key(principal, plan_id))
