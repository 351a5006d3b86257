"""Registry module test runs: `terraform test -cloud-run=<host>/<org>/<name>/<provider>`, as HCP Terraform's
test runs API shapes them (go-tfe's `TestRuns`, `TestVariables`, `ConfigurationVersions.CreateForRegistryModule`).

A private module's tests run in its test workspace: a workspace the server makes for the module the first time
its tests are configured (`Workspace.module_id`), never listed, named or reachable by the workspace API, whose
variables are the module's test variables, whose configuration versions are the uploaded test configurations and
whose runs, flagged `Run.test`, are the test runs. A test run is plan-only in the lowest lane, with no task stage,
no cost estimate and no state: its plan phase runs `terraform test -json` in the job sandbox, its JSON lines are
the log the CLI renders, and the runner reports the `test_summary` line. It is addressed as `trun-<suffix>` (the
run's `run-<suffix>`); its status is HCP's: pending, queued, running, finished, errored, canceled.
"""

from __future__ import annotations

from typing import Any

from terrace.domain import runs as rs
from terrace.domain.errors import Invalid
from terrace.domain.jobs import ModuleTestOptions
from terrace.domain.runs import Run

PREFIX = "trun"
TEST_SINCE = (1, 7)  # terraform's first release whose `terraform test` runs `*.tftest.hcl` files
FILTERS_MAX, FILTER_MAX, DIRECTORY_MAX = 100, 1024, 1024

_STATUS = {
    rs.PENDING: "pending",
    rs.PLAN_QUEUED: "queued",
    rs.PLANNING: "running",
    rs.PLANNED: "running",
    rs.PLANNED_AND_FINISHED: "finished",
    rs.ERRORED: "errored",
    rs.CANCELED: "canceled",
    rs.FORCE_CANCELED: "canceled",
    rs.DISCARDED: "canceled",
}
_TIMESTAMPS = {
    "queued-at": "plan-queued-at",
    "started-at": "planning-at",
    "finished-at": "planned-and-finished-at",
    "errored-at": "errored-at",
    "canceled-at": "canceled-at",
    "force-canceled-at": "force-canceled-at",
}


def test_workspace_id(module_id: str) -> str:
    """The id of a module's test workspace, which follows from the module's: one per module, never two."""
    return f"ws-{module_id.split('-', 1)[1]}-tests"


def module_id_of(workspace_id: str) -> str:
    """The module whose test workspace `workspace_id` is."""
    return "mod-" + workspace_id.split("-", 1)[1].removesuffix("-tests")


def test_run_id(run_id: str) -> str:
    return f"{PREFIX}-{rs.suffix(run_id)}"


def run_id_of(test_run_id: str) -> str | None:
    """The run behind `trun-<suffix>` (None: not a test run's id)."""
    prefix, _, tail = test_run_id.partition("-")
    return f"run-{tail}" if prefix == PREFIX and tail else None


def status(run: Run) -> str:
    return _STATUS.get(run.status, "running")


def status_timestamps(run: Run) -> dict[str, str]:
    found = {key: run.status_timestamps.get(source) for key, source in _TIMESTAMPS.items()}
    return {key: at for key, at in found.items() if at}


def result(run: Run) -> dict[str, Any]:
    """HCP's test-status and counts: `pending` until the runner reported its summary."""
    summary = run.test_result or {}
    return {
        "test-status": summary.get("status", "pending"),
        "tests-passed": summary.get("passed", 0),
        "tests-failed": summary.get("failed", 0),
        "tests-errored": summary.get("errored", 0),
        "tests-skipped": summary.get("skipped", 0),
    }


def options(attrs: dict[str, Any]) -> ModuleTestOptions:
    """The create request's `filters`, `test-directory`, `verbose` and `parallelism`, checked."""
    filters = attrs.get("filters") or []
    if not isinstance(filters, list) or len(filters) > FILTERS_MAX:
        raise Invalid(f"filters must be a list of at most {FILTERS_MAX} paths", pointer="/data/attributes/filters")
    for item in filters:
        if not isinstance(item, str) or not item or len(item) > FILTER_MAX or "\x00" in item:
            raise Invalid("each filter must be a test file's path", pointer="/data/attributes/filters")
    directory = attrs.get("test-directory") or ""
    if not isinstance(directory, str) or len(directory) > DIRECTORY_MAX or "\x00" in directory:
        raise Invalid("test-directory must be a path", pointer="/data/attributes/test-directory")
    if directory.startswith("/") or ".." in directory.split("/"):
        raise Invalid("test-directory must be inside the configuration", pointer="/data/attributes/test-directory")
    verbose = attrs.get("verbose", False)
    if not isinstance(verbose, bool):
        raise Invalid("verbose must be a boolean", pointer="/data/attributes/verbose")
    parallelism = attrs.get("parallelism")
    if parallelism is not None and (
        isinstance(parallelism, bool) or not isinstance(parallelism, int) or not 1 <= parallelism <= 256
    ):
        raise Invalid("parallelism must be a number from 1 to 256", pointer="/data/attributes/parallelism")
    return ModuleTestOptions(filters=filters, test_directory=directory, verbose=verbose, parallelism=parallelism)


def supports_test(product: str, version: str) -> bool:
    """Whether a runner binary runs `*.tftest.hcl` tests (terraform 1.7+ and OpenTofu 1.6+ do; older are refused)."""
    numbers = version.split(".")[:2]
    if len(numbers) < 2 or not all(n.isdigit() for n in numbers):
        return False
    since = TEST_SINCE if product == "Terraform" else (1, 6)
    return (int(numbers[0]), int(numbers[1])) >= since
