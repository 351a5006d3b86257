"""The runner protocol over /api/runner, and what a queued job is.

A job is one phase (plan or apply) of one run; its id is the phase id (`plan-…` / `apply-…`).

1. The API queues `JobMessage` in the run's organization's job queue, on the lane of its priority
   (apply ▸ plan ▸ speculative; `adapters/table_job_queue.py`).
2. A runner serves one organization for its life. It long-polls `POST /api/runner/jobs/next?wait=S`
   with `NextRequest`: the API takes its organization's next job (highest lane first, delayed retries
   once due) and claims it in the same call -> 200 `JobSpec` (with a fresh run token), or 204 when
   none came within `wait` seconds.
3. While working, every `heartbeat_interval_s`, the runner calls
   `POST /api/runner/jobs/{job_id}/heartbeat` (`HeartbeatRequest` -> `HeartbeatResponse`).
   `cancel` means send SIGINT to tofu; `force_cancel` means kill it. 404/409 means the job is not
   ours any more: stop it.
4. Before it starts the terraform process that applies (after `init`, which changes nothing), the runner
   calls `POST /api/runner/jobs/{job_id}/applying` (`HeartbeatRequest` -> `HeartbeatResponse`) and waits for
   it: the API records `apply_started_at`, after which a lost apply is never retried (it ends `errored`,
   state may be incomplete). When the call fails, or answers `cancel`, the runner does not apply.
5. Log bytes go to `PUT /api/runner/jobs/{job_id}/logs?offset=N` (raw bytes; N = bytes already sent in
   this attempt). The server owns the STX/ETX framing. An apply log must begin with three banner lines
   (the CLI skips them). A PUT stands for a heartbeat: the API records one with it when the last is older than
   half the interval, and its 204 carries the heartbeat's answer in `Terrace-Heartbeat` (`BEAT_HEADER`); the
   runner's next heartbeat is due `heartbeat_interval_s` after the last such answer.
6. Artifacts go straight to S3 with the presigned URLs of the spec (plan file and plan JSON), each PUT once with
   `If-None-Match: *`; the finish report names their MD5s, the API records the stored objects' MD5 and size and
   an apply's spec carries them (`plan_file_md5`, `plan_file_size`): the runner applies no other file.
7. `POST /api/runner/jobs/{job_id}/finish` with `FinishRequest` -> `FinishResponse`. A plan finished with
   `keep_for_apply` (the runner holds its working folder) whose run goes straight on to apply (auto-apply)
   gets that apply claimed for the same runner in `next_job`: it applies in the plan's folder, no second init.
8. A runner holding plan folders asks `POST /api/runner/held-runs` (`HeldRuns`) which of those runs may still
   be applied by it, and drops the others (discarded, canceled, applied elsewhere).
0. A runner started by the scaler holds no token: it first calls `POST /api/runner/enroll` with `EnrollRequest`
   -> `EnrollResponse`, its token. A local runner presents its single-use enrollment code
   (`TERRACE_RUNNER_ENROLLMENT_CODE`); a runner on ECS has none: it names its task (from the container metadata
   endpoint) and proves it is that task with an `sts:GetCallerIdentity` request signed by its task role
   (`identity`, `domain/runner_identity.py`). A used, expired or unknown code, a code of a task, or a proof of
   anyone but that task's role session, is 401; a task not registered yet, 409 (retry).
All other /api/runner calls carry `Authorization: Bearer <runner token>`: a token the scaler minted for this
runner, bound to one organization (another organization's job is 404), revoked when the runner is gone.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from terrace.domain.installed_modules import MAX_INSTALLED, InstalledModule, check_budget
from terrace.domain.terraform_actions import MAX_ACTIONS, DeclaredAction, PlannedInvocations

Phase = Literal["plan", "apply"]
Lane = Literal["apply", "plan", "speculative"]


class JobMessage(BaseModel):
    job_id: str
    run_id: str
    phase: Phase
    attempt: int = 1


class SignedRequest(BaseModel):
    """An `sts:GetCallerIdentity` request the runner signed with its task role (`domain/runner_identity.py`)."""

    method: str = Field(max_length=10)
    url: str = Field(max_length=2048)
    headers: dict[str, str] = Field(max_length=16)
    body: str = Field(max_length=200)

    @field_validator("headers")
    @classmethod
    def _bounded(cls, value: dict[str, str]) -> dict[str, str]:
        if any(len(name) > 64 or len(text) > 4096 for name, text in value.items()):
            raise ValueError("a header name or value too long")
        return value


class EnrollRequest(BaseModel):
    # a local runner's code; a runner on ECS has none: it names its task and proves it is that task
    code: str | None = Field(default=None, min_length=1, max_length=200)
    task_arn: str | None = Field(default=None, max_length=2048)  # the runner's own ECS task, if it has one
    identity: SignedRequest | None = None


class EnrollResponse(BaseModel):
    token: str
    token_id: str
    organization: str
    runner_id: str


HAND_OVER_HEADER = "Terrace-Hand-Over"  # on a 204 of jobs/next: exit, the slot goes to another organization


class NextRequest(BaseModel):
    runner_id: str = Field(min_length=1, max_length=200)
    # only jobs of these lanes (`definitions.LANE_PRIORITY`; empty: any): a runner on Fargate Spot takes
    # speculative plans only
    lanes: list[Literal["apply", "plan", "speculative"]] = Field(default_factory=list, max_length=3)
    # how many jobs this runner has run: one that ran some may be told to hand its slot over (`runner_turns.py`)
    served: int = Field(default=0, ge=0, le=10**9)


class ClaimRequest(BaseModel):
    runner_id: str
    attempt: int = 1


class ModuleTestOptions(BaseModel):
    """`terraform test`'s options a test run asked for (`domain/module_tests.py` checks them)."""

    filters: list[str] = Field(default_factory=list, max_length=100)
    test_directory: str = Field(default="", max_length=1024)
    verbose: bool = False
    parallelism: int | None = Field(default=None, ge=1, le=256)


class ModuleTestSummary(BaseModel):
    """The `test_summary` line of `terraform test -json` a test run's runner reports."""

    status: Literal["pending", "skip", "pass", "fail", "error"]
    passed: int = Field(default=0, ge=0, le=10**6)
    failed: int = Field(default=0, ge=0, le=10**6)
    errored: int = Field(default=0, ge=0, le=10**6)
    skipped: int = Field(default=0, ge=0, le=10**6)


class Operation(BaseModel):
    is_destroy: bool = False
    refresh: bool = True
    refresh_only: bool = False
    target_addrs: list[str] = Field(default_factory=list)
    replace_addrs: list[str] = Field(default_factory=list)
    # `-invoke=<addr>` each (terraform 1.14+); a runner whose binary cannot invoke actions errors the job
    invoke_action_addrs: list[str] = Field(default_factory=list)
    speculative: bool = False  # plan-only: never applied
    save_plan: bool = False
    # a query run: `terraform query -json` (terraform 1.14+) instead of a plan, `-generate-config-out` when asked;
    # a runner whose binary has no `query` errors the job
    query: bool = False
    generate_config_out: bool = False
    # a registry module's test run: `terraform test -json` with these options instead of a plan
    test: ModuleTestOptions | None = None


class RunVariable(BaseModel):
    key: str
    value: str
    category: Literal["terraform", "env"]
    hcl: bool = False
    sensitive: bool = False


class WorkloadCredential(BaseModel):
    """A workload identity token of this phase (`domain/workload_identity.py`) and how the child gets it: the
    runner writes it to a file only the job's uid reads (`runner/workload_identity.py`)."""

    kind: str
    token: str = Field(default="", repr=False)
    env: dict[str, str] = Field(default_factory=dict)
    token_file_env: list[str] = Field(default_factory=list)
    token_env: list[str] = Field(default_factory=list)
    gcp_credentials: dict[str, Any] | None = None
    error: str | None = None  # the job fails with this message (a TFC_* variable is missing)


class JobSpec(BaseModel):
    job_id: str
    run_id: str
    phase: Phase
    attempt: int
    organization: str
    workspace_id: str
    workspace_name: str
    project_name: str = ""  # the workspace's project (`TFC_PROJECT_NAME` in the job)
    # the configuration version's VCS origin (`TFC_CONFIGURATION_VERSION_GIT_*`); empty: not from a VCS
    git_branch: str = ""
    git_commit_sha: str = ""
    git_tag: str = ""
    terraform_version: str  # "latest" or a version; picks among installed binaries
    # the tool ("terraform" | "opentofu") whose exact `terraform_version` the run resolved to in the deployment's
    # catalog: a runner that does not hold it fetches it (runner/tool_fetch.py); empty: choose among those held
    tool: str = ""
    # AWS: the deployment's copy of that release's archive in the blob bucket (`Settings.tool_blob_cache`): a
    # presigned GET, and for the deployment's own runners (never an agent) a presigned PUT creating it once. The
    # runner checks a copy against the vendor's signed SHA256SUMS as one from the mirror
    tool_cache_url: str | None = None
    tool_cache_upload_url: str | None = None
    working_directory: str = ""
    operation: Operation
    hostname: str  # e.g. "localhost:8443": where the backend override points
    run_token: str  # short-lived, may read/lock/write this workspace's state only
    configuration_url: str  # presigned GET of the configuration tarball (.tar.gz)
    configuration_md5: str | None = None  # its MD5 recorded when it was uploaded: the runner runs no other
    plan_file_url: str | None = None  # apply phase: presigned GET of the saved plan file
    plan_file_md5: str | None = None  # apply phase: the plan file's MD5 recorded when its plan finished
    plan_file_size: int | None = None  # apply phase: and its size; the runner applies no other file
    # plan phase: presigned PUTs (single-use: sent with `If-None-Match: *`) for the binary plan file and for
    # `show -json` of the plan
    plan_upload_url: str | None = None
    plan_json_upload_url: str | None = None
    variables: list[RunVariable] = Field(default_factory=list)
    # the workspace's SSH key (a private key), for `git::ssh://` module sources during init; this job only
    ssh_private_key: str | None = Field(default=None, repr=False)
    heartbeat_interval_s: int = 10
    workload_credentials: list[WorkloadCredential] = Field(default_factory=list)  # dynamic provider credentials
    # Hold Your Own Key: the workspace's state and plans are encrypted on the agent (`domain/hyok_jobs.py`)
    hyok: bool = False


class HeartbeatRequest(BaseModel):
    runner_id: str


class HeartbeatResponse(BaseModel):
    cancel: bool = False
    force_cancel: bool = False


# On a log PUT's 204: the PUT stood for a heartbeat (the runner sends none of its own meanwhile); the value is the
# heartbeat's answer: "run", "cancel" or "force-cancel". A server without it: the runner keeps beating.
BEAT_HEADER = "Terrace-Heartbeat"


def beat_header(answer: HeartbeatResponse) -> str:
    return "force-cancel" if answer.force_cancel else "cancel" if answer.cancel else "run"


def beat_of(header: str | None) -> HeartbeatResponse | None:
    """The heartbeat answer a log PUT's `BEAT_HEADER` carries; None when it carries none (not a beat)."""
    if header not in ("run", "cancel", "force-cancel"):
        return None
    return HeartbeatResponse(cancel=header != "run", force_cancel=header == "force-cancel")


class FinishRequest(BaseModel):
    runner_id: str
    status: Literal["finished", "errored", "canceled"]
    has_changes: bool = False
    resource_additions: int = 0
    resource_changes: int = 0
    resource_destructions: int = 0
    resource_imports: int = 0
    error_message: str | None = None
    keep_for_apply: bool = False  # plan: this runner holds the plan's folder and would apply it now
    # plan: the MD5 of the plan file and of the plan JSON it uploaded; the API checks the stored objects against them
    plan_md5: str | None = Field(default=None, pattern="^[0-9a-f]{32}$")
    plan_json_md5: str | None = Field(default=None, pattern="^[0-9a-f]{32}$")
    # plan: the actions its configuration declares (None: not read, an older runner) and the invocations it
    # planned, from its JSON plan (`domain/terraform_actions.py`)
    declared_actions: list[DeclaredAction] | None = Field(default=None, max_length=MAX_ACTIONS)
    action_invocations: list[PlannedInvocations] = Field(default_factory=list, max_length=MAX_ACTIONS)
    test_summary: ModuleTestSummary | None = None  # a test run's (`Operation.test`): what its `terraform test` said
    # plan: the module versions its `terraform init` installed (`domain/installed_modules.py`; None: not read, an
    # older runner)
    installed_modules: list[InstalledModule] | None = Field(default=None, max_length=MAX_INSTALLED)

    _installed_budget = field_validator("installed_modules")(check_budget)


class FinishResponse(BaseModel):
    run_status: str
    next_job: JobSpec | None = None  # the same run's apply, claimed for this runner (auto-apply)


class UploadUrls(BaseModel):
    """A running plan's PUT URLs, signed when its runner asks, just before it uploads (`JobSpec`'s may have
    expired with the session that signed them)."""

    plan_upload_url: str | None = None
    plan_json_upload_url: str | None = None


class HeldRuns(BaseModel):
    runner_id: str = Field(min_length=1, max_length=200)
    run_ids: list[str] = Field(default_factory=list, max_length=100)
