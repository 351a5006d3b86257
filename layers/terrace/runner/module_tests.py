"""A registry module's test run (`domain/module_tests.py`): `terraform test -json` in the job sandbox, in a fresh
folder prepared as a plan's but without a backend (a test keeps its state in memory: no override is written and
`init` runs with `-backend=false`), its JSON lines streamed to the plan phase's log for the CLI to render. The
`test_summary` line is the report's; tests that fail finish the job (the summary says they failed), a `terraform
test` that gives no summary errors it. It is never retried: a test creates and destroys real infrastructure."""

from __future__ import annotations

import json

from terrace.domain import module_tests
from terrace.domain.jobs import FinishRequest, ModuleTestOptions, ModuleTestSummary
from terrace.runner import commands
from terrace.runner.job_setup import Job, JobFailed, JobSteps
from terrace.runner.rundir import RunSetupError

PARALLELISM_SINCE = (1, 12)  # terraform's first `terraform test -parallelism`
SUMMARY_TAIL_BYTES = 64 * 1024


def test_args(options: ModuleTestOptions, binary: commands.Binary) -> list[str]:
    args = ["test", "-no-color", "-json", *(f"-filter={f}" for f in options.filters)]
    if options.test_directory:
        args.append(f"-test-directory={options.test_directory}")
    if options.verbose:
        args.append("-verbose")
    if options.parallelism is not None and _at_least(binary, PARALLELISM_SINCE):
        args.append(f"-parallelism={options.parallelism}")
    return args


def _at_least(binary: commands.Binary, since: tuple[int, int]) -> bool:
    numbers = binary.version.split(".")[:2]
    if binary.product != "Terraform" or len(numbers) < 2 or not all(n.isdigit() for n in numbers):
        return False
    return (int(numbers[0]), int(numbers[1])) >= since


def summary_of(output: bytes) -> ModuleTestSummary | None:
    """The last `test_summary` line of `terraform test -json`'s output (None: there is none)."""
    for line in reversed(output.splitlines()):
        if b'"test_summary"' not in line:
            continue
        try:
            found = json.loads(line)
            if found.get("type") == "test_summary":
                return ModuleTestSummary.model_validate(found["test_summary"])
        except (ValueError, KeyError, TypeError):
            continue
    return None


def run_tests(steps: JobSteps, job: Job, runner_id: str) -> FinishRequest:
    spec = job.spec
    assert spec.operation.test is not None
    steps.banner(job, f"running the tests of {module_tests.test_run_id(spec.run_id)}")
    assert job.binary is not None
    if not module_tests.supports_test(job.binary.product, job.binary.version):
        raise RunSetupError(
            f"this is a module test run (terraform test), which needs Terraform 1.7 or OpenTofu 1.6 or newer; the"
            f" runner's binary is {job.binary.product} v{job.binary.version or 'unknown'}"
        )
    steps.prepare(job)
    tail = bytearray()

    def sink(chunk: bytes) -> None:
        job.log.write(chunk)
        tail.extend(chunk)
        del tail[: max(0, len(tail) - SUMMARY_TAIL_BYTES)]

    code = steps.run(job, test_args(spec.operation.test, job.binary), sink=sink)
    summary = summary_of(bytes(tail))
    if summary is None:
        raise JobFailed(f"terraform test gave no summary (exit code {code})")
    return FinishRequest(runner_id=runner_id, status="finished", test_summary=summary)
