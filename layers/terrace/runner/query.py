"""A query run's job (`domain/query_runs.py`): `terraform query -json` in the job sandbox, in a fresh folder
prepared as a plan's (configuration, run files, init), its JSON lines streamed to the plan phase's log for the
CLI to render. Nothing is uploaded and nothing is held: a query changes no state and leaves no plan."""

from __future__ import annotations

from terrace.domain import query_runs
from terrace.domain.jobs import FinishRequest
from terrace.runner import commands
from terrace.runner.job_setup import Job, JobFailed, JobSteps

GENERATED_FILE = "generated.tf"  # named to `-generate-config-out`; with `-json` terraform writes nothing there


def run_query(steps: JobSteps, job: Job, runner_id: str) -> FinishRequest:
    spec = job.spec
    steps.banner(job, f"running query {query_runs.query_id(spec.run_id)}")
    assert job.binary is not None
    commands.check_query(job.binary)  # before anything runs: an older binary has no `query`
    steps.prepare(job)
    args = commands.query_args(spec.operation, job.folder.tmp_dir / GENERATED_FILE)
    code, _ = steps.run_retried(job, args, what="query")
    if code != 0:
        raise JobFailed(f"the query failed (exit code {code})")
    return FinishRequest(runner_id=runner_id, status="finished")
