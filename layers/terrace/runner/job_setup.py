"""A job's steps in its folder (`job_folder.py`): banner, binary, configuration, run files, init, each child.

A fresh folder is built from the configuration and `init`; a folder the same run's plan left (`plan_cache.py`)
is resumed: new run files (the apply's run token), no download, no init. Files in the job's folders are
written through `JobFolder` only, which never follows what a job left there.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from collections.abc import Callable, Container
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from terrace.domain import tool_versions
from terrace.domain.jobs import JobSpec
from terrace.runner import catalog as runner_catalog
from terrace.runner import commands, release_check, sandbox, ssh_key, workload_identity
from terrace.runner.client import Transfers
from terrace.runner.cloud_block import strip_cloud_blocks
from terrace.runner.config import RunnerConfig
from terrace.runner.job_folder import JobFolder
from terrace.runner.logstream import LogStream
from terrace.runner.process import CancelControl, run_child
from terrace.runner.release_check import ReleaseRefused
from terrace.runner.rundir import BackendOverride, child_env, run_identity_env, write_run_files
from terrace.runner.safe_tar import extract, working_dir
from terrace.runner.tool_fetch import ToolFetcher

if TYPE_CHECKING:
    from terrace.runner.hyok_state import HyokAgent as HyokState

log = logging.getLogger("terrace.runner.job_setup")
# `terraform init`, `plan` and `show -json` reach the API (the remote backend's ping, the workspace, its state) and
# do not retry a connection reset or refused: such a failure is retried, since none of them changes anything anywhere
# (a plan's state lock is the run's own: taking or releasing it again is a no-op), any other ends the job. An apply
# is never run again (the apply-once rule).
NETWORK_RETRY_DELAYS_S = (1.0, 2.0, 4.0)
OUTPUT_TAIL_BYTES = 256 * 1024  # what is searched for a network error, and what a failed init writes to the log
NETWORK_ERROR = re.compile(
    rb"connection reset by peer|connection refused|broken pipe|i/o timeout|TLS handshake timeout|unexpected EOF"
    rb"|server closed idle connection|: EOF"
)


class JobFailed(Exception):
    """The job ends errored with this message (shown in the log and the finish report)."""


class JobCanceled(Exception):
    pass


@dataclass
class Job:
    spec: JobSpec
    folder: JobFolder
    log: LogStream
    control: CancelControl
    binary: commands.Binary | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = Path(".")
    identity: sandbox.JobIdentity | None = None
    resumed: bool = False  # works in the folder the same run's plan left


class JobSteps:
    def __init__(
        self,
        config: RunnerConfig,
        runner_id: str,
        transfers: Transfers,
        backend_override: BackendOverride,
        hyok: HyokState | None = None,
    ) -> None:
        self.config, self.runner_id, self.transfers = config, runner_id, transfers
        self.backend_override = backend_override
        self.hyok = hyok  # a Hold Your Own Key workspace's state and plans (`runner/hyok_state.py`, agents only)
        self.fetcher = tool_fetcher(config, transfers)

    def banner(self, job: Job, doing: str) -> None:
        """The binary and the three lines an apply log must begin with (the CLI skips them)."""
        held = runner_catalog.scan(self.config.tools_dir)  # per job: a folder an operator adds counts at once
        tool = job.spec.tool if job.spec.tool in tool_versions.TOOLS else ""  # the run's: never the other
        job.binary = self._pinned(job, held) or commands.select_binary(
            job.spec.terraform_version,
            self.config.tf_binary,
            self.config.tf_binaries,
            held,
            tool or self.config.default_tool,
            only=bool(tool),
        )
        job.log.line(f"{job.binary.product} v{job.binary.version or 'unknown'}")
        job.log.line("on linux_amd64")
        job.log.line(f"Terrace runner {self.runner_id}: {doing}")
        check_cancel(job)

    def _pinned(self, job: Job, held: runner_catalog.Catalog) -> commands.Binary | None:
        """The exact version the run resolved to in the deployment's catalog: held, or fetched and checked."""
        tool, version = job.spec.tool, job.spec.terraform_version.strip()
        if tool not in tool_versions.TOOLS or not tool_versions.is_version(version):
            return None
        product = "OpenTofu" if tool == "opentofu" else "Terraform"
        if version in held.get(tool, {}):
            return commands.Binary(path=held[tool][version], version=version, product=product)
        if self.fetcher is None:
            return None  # the runner chooses among what it holds (and says what that is)
        try:
            bucket = (job.spec.tool_cache_url, job.spec.tool_cache_upload_url)
            path = self.fetcher.ensure(tool, version, say=job.log.line, bucket=bucket)
        except ReleaseRefused as exc:
            source = f" from {exc.mirror}" if exc.mirror else ""
            raise JobFailed(f"{product} {version} could not be fetched{source}: {exc}; nothing was cached") from exc
        return commands.Binary(path=str(path), version=version, product=product)

    def prepare(self, job: Job) -> None:
        """Configuration, run files, init, in a fresh folder."""
        spec, folder = job.spec, job.folder
        archive = folder.path / "configuration.tar.gz"
        self.transfers.download(spec.configuration_url, archive, self.config.max_config_bytes, "configuration")
        if spec.configuration_md5 is not None:
            with archive.open("rb") as stored:
                if hashlib.file_digest(stored, "md5").hexdigest() != spec.configuration_md5.lower():
                    raise JobFailed("the stored configuration is not the one uploaded (MD5 differs): not run")
        extract(
            archive,
            folder.config,
            max_entries=self.config.max_config_entries,
            max_bytes=self.config.max_config_expanded_bytes,
        )
        archive.unlink()
        job.cwd = working_dir(folder.config, spec.working_directory)
        strip_cloud_blocks(job.cwd)  # the backend override below takes its place (and 1.0 cannot parse one)
        self._run_files(job)
        if spec.hyok:  # its state into the run's local backend, decrypted on this agent
            self.hyok_state(job).pull(job)
        job.log.line("Initializing plugins and modules...")
        init_env = dict(job.env)
        if spec.ssh_private_key:  # for git::ssh:// module sources; gone once init ends
            init_env.update(ssh_key.install(folder.path, spec.ssh_private_key))
            uid = job.identity.uid if job.identity else None
            if not ssh_key.usable_by(uid):
                job.log.line(f"Warning: uid {uid} has no passwd entry on this runner: ssh (git::ssh:// sources) fails")
        folder.hand_over()  # nothing of the job has run yet: all in its folders is the runner's making
        try:
            args = [*commands.INIT_ARGS, "-backend=false"] if spec.operation.test else commands.INIT_ARGS
            code, init_output = self.run_retried(job, args, what="init", env=init_env, to_log=False)
        finally:
            ssh_key.remove(folder.path)
        if code != 0:
            job.log.write(init_output)
            raise JobFailed(f"init failed (exit code {code})")

    def hyok_state(self, job: Job) -> HyokState:
        if self.hyok is None:
            raise JobFailed(
                f"workspace {job.spec.workspace_name} uses Hold Your Own Key: its runs need an agent that reaches "
                "the customer's key (`terrace agent` with TERRACE_HYOK_KEY_FILE, or AWS KMS)"
            )
        return self.hyok

    def resume(self, job: Job, cwd: Path) -> None:
        """The plan's folder with this job's run files: no download, no init (`.terraform` is the plan's)."""
        job.cwd, job.resumed = cwd, True
        job.folder.adopt(job.identity)
        self._run_files(job)
        job.log.line("Reusing the plan's working directory: providers and modules are installed (no init).")

    def _run_files(self, job: Job) -> None:
        operator = self.config.operator_cli_config.read_text() if self.config.operator_cli_config else ""
        cli_config = write_run_files(job.spec, job.folder, job.cwd, operator, self.backend_override)
        job.env = child_env(
            path=os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            home=job.folder.home,
            cli_config=cli_config,
            ssl_cert_file=self._ca_bundle_copy(job),
            variables=job.spec.variables,
            tmp_dir=job.folder.tmp_dir,
            run_env=run_identity_env(job.spec, self.config.agent_version),
        )
        job.env.update(workload_identity.install(job.folder, job.spec.workload_credentials))

    def run_retried(
        self,
        job: Job,
        args: list[str],
        *,
        what: str,
        succeeded: Container[int] = (0,),
        env: dict[str, str] | None = None,
        to_log: bool = True,
        stdout: Callable[[], AbstractContextManager[BinaryIO]] | None = None,
    ) -> tuple[int, bytes]:
        """`run` again, after 1, 2 and 4 s, while it fails with a network error in its output (only for commands
        that change nothing anywhere: init, plan, show). (exit code, the last OUTPUT_TAIL_BYTES of its output);
        the output goes to the job's log too when `to_log`, and stdout to a file `stdout` opens anew per attempt."""
        code, output = 0, bytearray()
        for delay in (*NETWORK_RETRY_DELAYS_S, None):
            output.clear()

            def sink(chunk: bytes) -> None:
                output.extend(chunk)
                del output[: max(0, len(output) - OUTPUT_TAIL_BYTES)]
                if to_log:
                    job.log.write(chunk)

            if stdout is None:
                code = self.run(job, args, sink=sink, env=env)
            else:
                with stdout() as out:
                    code = self.run(job, args, sink=sink, stdout=out, env=env)
            if code in succeeded or delay is None or not NETWORK_ERROR.search(output):
                break
            job.log.line(f"\n{what} met a network error reaching the API; retrying in {delay:g} s")
            log.warning("job %s: %s met a network error; retrying in %s s", job.spec.job_id, what, delay)
            time.sleep(delay)
        return code, bytes(output)

    def run(
        self,
        job: Job,
        args: list[str],
        *,
        sink: Callable[[bytes], object] | None = None,
        stdout: BinaryIO | None = None,
        env: dict[str, str] | None = None,
    ) -> int:
        check_cancel(job)
        assert job.binary is not None
        started = time.monotonic()
        code = run_child(
            [job.binary.path, *args],
            identity=job.identity,
            cwd=job.cwd,
            env=env or job.env,
            control=job.control,
            sink=sink or job.log.write,
            stdout=stdout,
        )
        log.info("job %s: %s exited %d after %.2f s", job.spec.job_id, args[0], code, time.monotonic() - started)
        check_cancel(job)
        return code

    def _ca_bundle_copy(self, job: Job) -> str | None:
        """The CA bundle copied into the job folder: readable by the job uid wherever the original lives."""
        if not self.config.ssl_cert_file:
            return None
        return str(job.folder.write("ca-bundle.pem", Path(self.config.ssl_cert_file).read_bytes(), job_reads=True))


def tool_fetcher(config: RunnerConfig, transfers: Transfers) -> ToolFetcher | None:
    """The runner's fetcher of versions it does not hold (None when TERRACE_TOOL_FETCH is off)."""
    if not config.tool_fetch:
        return None
    mirrors = {"terraform": config.tool_mirror_terraform, "opentofu": config.tool_mirror_opentofu}
    keys = release_check.load_keys(config.tool_trusted_keys) if config.tool_trusted_keys else None
    return ToolFetcher(config.tools_dir or config.work_dir / "tools", transfers, mirrors, keys)


def check_cancel(job: Job) -> None:
    if job.control.requested:
        raise JobCanceled()
