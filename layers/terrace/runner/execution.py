"""Executes one claimed job (a plan or apply phase) and returns what to report to the API."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import httpx

from terrace.domain.jobs import FinishRequest, JobSpec
from terrace.domain.plan_json import hide_secrets
from terrace.runner import catalog as runner_catalog
from terrace.runner import commands, sandbox, ssh_key
from terrace.runner.client import ApiError, RunnerApi, Transfers
from terrace.runner.cloud_block import strip_cloud_blocks
from terrace.runner.config import RunnerConfig
from terrace.runner.logstream import LogStream
from terrace.runner.process import CancelControl, Heartbeat, run_child
from terrace.runner.rundir import BackendOverride, RunSetupError, child_env, remote_backend_override, write_run_files
from terrace.runner.safe_tar import UnsafeArchive, extract, working_dir

log = logging.getLogger("terrace.runner.execution")
APPLY_SUMMARY = re.compile(rb"Resources: (\d+) added, (\d+) changed, (\d+) destroyed")
MAX_PLAN_BYTES = 1024 * 1024 * 1024


class JobFailed(Exception):
    """The job ends errored with this message (shown in the log and the finish report)."""


class JobCanceled(Exception):
    pass


# Providers and plugins listen on a unix socket in TMPDIR ("<TMPDIR>/plugin<up to 10 digits>"), whose path may
# not pass 107 bytes: past it they die before their handshake ("Unrecognized remote plugin message", "Plugin
# reinitialization required"). A run folder deeper than this (a long work dir) gets a TMPDIR elsewhere.
SOCKET_DIR_MAX = 80


@dataclass
class _Job:
    spec: JobSpec
    run_dir: Path
    log: LogStream
    control: CancelControl
    binary: commands.Binary | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = Path(".")
    identity: sandbox.JobIdentity | None = None
    short_tmp: Path | None = None  # TMPDIR outside run_dir when run_dir's path is too long (SOCKET_DIR_MAX)


class JobExecutor:
    def __init__(
        self,
        config: RunnerConfig,
        api: RunnerApi,
        transfers: Transfers,
        backend_override: BackendOverride = remote_backend_override,
        echo_to: TextIO | None = None,
    ) -> None:
        self.config, self.api, self.transfers = config, api, transfers
        self.backend_override = backend_override
        self.echo_to = echo_to

    def execute(self, spec: JobSpec) -> FinishRequest:
        sandbox.prepare_work_dir(self.config.work_dir)
        run_dir = Path(tempfile.mkdtemp(prefix=f"{spec.job_id}-", dir=self.config.work_dir))
        identity = sandbox.allocate()
        secrets = [spec.run_token, *(v.value for v in spec.variables if v.sensitive)]
        secrets += [spec.ssh_private_key] if spec.ssh_private_key else []
        stream = LogStream(  # masks `secrets` in what it sends and what it prints
            lambda offset, chunk: self.api.put_logs(spec.job_id, offset, chunk),
            job_id=spec.job_id,
            redact=secrets,
            echo_to=self.echo_to,
        )
        job = _Job(spec=spec, run_dir=run_dir, log=stream, control=CancelControl(), identity=identity)

        def beat() -> object:
            return self.api.heartbeat(spec.job_id)

        report = FinishRequest(runner_id=self.api.runner_id, status="finished")
        try:
            with Heartbeat(beat, job.control, spec.heartbeat_interval_s):  # type: ignore[arg-type]
                try:
                    report = self._plan(job) if spec.phase == "plan" else self._apply(job)
                except JobCanceled:
                    stream.line("\nThe run was canceled.")
                    report = FinishRequest(runner_id=self.api.runner_id, status="canceled")
                except (JobFailed, RunSetupError, UnsafeArchive, ApiError) as exc:
                    stream.line(f"\nError: {exc}")
                    report = self._errored(job, str(exc))
                except Exception as exc:
                    log.exception("job %s failed in the runner", spec.job_id)
                    stream.line(f"\nError: the runner failed: {type(exc).__name__}")
                    report = self._errored(job, f"the runner failed: {type(exc).__name__}")
        finally:
            stream.close()
            if identity is not None:
                sandbox.kill_uid(identity.uid)  # before the folder goes: nothing of the job writes to it anymore
            shutil.rmtree(run_dir, ignore_errors=True)
            if job.short_tmp is not None:
                shutil.rmtree(job.short_tmp, ignore_errors=True)
            if identity is not None:
                identity.release()
        if job.control.requested and report.status != "finished":
            report = report.model_copy(update={"status": "canceled"})
        return report

    # -- phases ---------------------------------------------------------------------------------

    def _plan(self, job: _Job) -> FinishRequest:
        spec = job.spec
        self._prepare(job, f"planning run {spec.run_id}")
        plan_file = job.run_dir / "plan.tfplan"
        plan_code = self._run(job, commands.plan_args(spec.operation, plan_file))
        if plan_code not in (0, 2):
            raise JobFailed(f"plan failed (exit code {plan_code})")
        plan_json_file = job.run_dir / "plan.json"
        counts = commands.ChangeCounts()
        if plan_file.exists():
            code = self._run(job, commands.show_json_args(plan_file), stdout_file=plan_json_file)
            if code != 0:
                raise JobFailed(f"reading the plan as JSON failed (exit code {code})")
            try:
                plan_json = json.loads(plan_json_file.read_bytes())
                counts = commands.count_changes(plan_json)
            except ValueError as exc:
                raise JobFailed("the JSON plan could not be parsed") from exc
            self._hide_secrets(spec, plan_json, plan_json_file)
            if spec.plan_json_upload_url:
                self.transfers.upload(spec.plan_json_upload_url, plan_json_file, "JSON plan")
            if spec.plan_upload_url:
                self.transfers.upload(spec.plan_upload_url, plan_file, "plan file")
        return FinishRequest(
            runner_id=self.api.runner_id,
            status="finished",
            has_changes=plan_code == 2,
            resource_additions=counts.additions,
            resource_changes=counts.changes,
            resource_destructions=counts.destructions,
            resource_imports=counts.imports,
        )

    def _apply(self, job: _Job) -> FinishRequest:
        spec = job.spec
        if not spec.plan_file_url:
            raise JobFailed("the apply job has no saved plan to apply")
        self._prepare(job, f"applying run {spec.run_id}")
        plan_file = job.run_dir / "plan.tfplan"
        self.transfers.download(spec.plan_file_url, plan_file, MAX_PLAN_BYTES, "saved plan")
        tail: deque[bytes] = deque(maxlen=64)

        def sink(chunk: bytes) -> None:
            tail.append(chunk)
            job.log.write(chunk)

        self._announce_apply(job)
        code = self._run(job, commands.apply_args(plan_file), sink=sink)
        if code != 0:
            raise JobFailed(f"apply failed (exit code {code})")
        matches = APPLY_SUMMARY.findall(b"".join(tail))
        added, changed, destroyed = (int(g) for g in matches[-1]) if matches else (0, 0, 0)
        return FinishRequest(
            runner_id=self.api.runner_id,
            status="finished",
            has_changes=bool(added or changed or destroyed),
            resource_additions=added,
            resource_changes=changed,
            resource_destructions=destroyed,
        )

    @staticmethod
    def _hide_secrets(spec: JobSpec, plan_json: object, plan_json_file: Path) -> None:
        """The uploaded plan JSON holds no sensitive variable value (nor the run token)."""
        sensitive = [v for v in spec.variables if v.sensitive]
        if not isinstance(plan_json, dict):
            return
        hidden = hide_secrets(
            plan_json,
            [spec.run_token, *(v.value for v in sensitive)],
            {v.key for v in sensitive if v.category == "terraform"},
        )
        plan_json_file.write_bytes(json.dumps(hidden).encode())

    # -- steps ----------------------------------------------------------------------------------

    def _prepare(self, job: _Job, doing: str) -> None:
        """Banner, binary, configuration, run files, init."""
        spec = job.spec
        job.binary = commands.select_binary(
            spec.terraform_version,
            self.config.tf_binary,
            self.config.tf_binaries,
            runner_catalog.scan(self.config.tools_dir),  # per job: a folder an operator adds counts at once
            self.config.default_tool,
        )
        job.log.line(f"{job.binary.product} v{job.binary.version or 'unknown'}")
        job.log.line("on linux_amd64")
        job.log.line(f"Terrace runner {self.api.runner_id}: {doing}")
        self._check_cancel(job)
        archive = job.run_dir / "configuration.tar.gz"
        self.transfers.download(spec.configuration_url, archive, self.config.max_config_bytes, "configuration")
        config_root = job.run_dir / "config"
        extract(
            archive,
            config_root,
            max_entries=self.config.max_config_entries,
            max_bytes=self.config.max_config_expanded_bytes,
        )
        archive.unlink()
        job.cwd = working_dir(config_root, spec.working_directory)
        strip_cloud_blocks(job.cwd)  # the backend override below takes its place (and 1.0 cannot parse one)
        operator = self.config.operator_cli_config.read_text() if self.config.operator_cli_config else ""
        cli_config = write_run_files(spec, job.cwd, job.run_dir, operator, self.backend_override)
        home, tmp = job.run_dir / "home", job.run_dir / "tmp"
        home.mkdir()
        tmp.mkdir()
        if len(str(tmp)) > SOCKET_DIR_MAX:
            tmp = job.short_tmp = self._short_tmp(job)
        job.env = child_env(
            path=os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            home=home,
            cli_config=cli_config,
            ssl_cert_file=self._ca_bundle_copy(job),
            variables=spec.variables,
            tmp_dir=tmp,
        )
        job.log.line("Initializing plugins and modules...")
        init_output = bytearray()
        init_env = dict(job.env)
        if spec.ssh_private_key:  # for git::ssh:// module sources; gone once init ends
            init_env.update(ssh_key.install(job.run_dir, spec.ssh_private_key))
            uid = job.identity.uid if job.identity else None
            if not ssh_key.usable_by(uid):
                job.log.line(f"Warning: uid {uid} has no passwd entry on this runner: ssh (git::ssh:// sources) fails")
        try:
            code = self._run(job, commands.INIT_ARGS, sink=init_output.extend, env=init_env)
        finally:
            ssh_key.remove(job.run_dir)
        if code != 0:
            job.log.write(bytes(init_output[-256 * 1024 :]))
            raise JobFailed(f"init failed (exit code {code})")

    @staticmethod
    def _short_tmp(job: _Job) -> Path:
        """A private TMPDIR in the system's temporary folder, owned by the job uid like run_dir."""
        short = Path(tempfile.mkdtemp(prefix="terrace-job-"))
        if job.identity is not None:
            os.chown(short, job.identity.uid, job.identity.uid)
        return short

    def _run(
        self,
        job: _Job,
        args: list[str],
        *,
        sink: Callable[[bytes], object] | None = None,
        stdout_file: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> int:
        self._check_cancel(job)
        assert job.binary is not None
        sandbox.hand_over(job.run_dir, job.identity)
        code = run_child(
            [job.binary.path, *args],
            identity=job.identity,
            cwd=job.cwd,
            env=env or job.env,
            control=job.control,
            sink=sink or job.log.write,
            stdout_file=stdout_file,
        )
        self._check_cancel(job)
        return code

    def _announce_apply(self, job: _Job) -> None:
        """Nothing applies unless the API recorded that it starts: a lost apply is then never run twice."""
        self._check_cancel(job)
        try:
            answer = self.api.start_apply(job.spec.job_id)
        except ApiError as exc:
            raise JobFailed(f"the API did not let the apply start; nothing was applied ({exc})") from exc
        except httpx.TransportError as exc:
            raise JobFailed(f"the API could not be told that the apply starts; nothing was applied ({exc})") from exc
        job.control.apply(answer)
        self._check_cancel(job)

    def _ca_bundle_copy(self, job: _Job) -> str | None:
        """The CA bundle copied into the job folder: readable by the job uid wherever the original lives."""
        if not self.config.ssl_cert_file:
            return None
        copy = job.run_dir / "ca-bundle.pem"
        shutil.copyfile(self.config.ssl_cert_file, copy)
        return str(copy)

    @staticmethod
    def _check_cancel(job: _Job) -> None:
        if job.control.requested:
            raise JobCanceled()

    def _errored(self, job: _Job, message: str) -> FinishRequest:
        tail = job.log.tail(15)
        detail = f"{message}\n{tail}" if tail else message
        return FinishRequest(runner_id=self.api.runner_id, status="errored", error_message=detail[-4000:])
