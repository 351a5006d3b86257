"""The embedded server (`terrace serve --data DIR`, a real process) keeps everything across restarts, and a crash
mid-apply loses nothing acknowledged: the restarted server hands the dead runner's job back by the reaper's rules
(an apply that had started ends `errored`), the workspace lock is released. A clean stop prints no traceback."""

from __future__ import annotations

import importlib.util
import json
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e_runs import (
    RUN_TIMEOUT_S,
    TWO_RESOURCES,
    current_state,
    remote_dir,
    remote_workspace,
    runs,
    wait_final,
    wait_for,
    wait_run,
)
from job_uids import traversable

pytestmark = pytest.mark.e2e


def _harness() -> Any:
    """This folder's conftest (by path: `import conftest` is ambiguous across test folders)."""
    spec = importlib.util.spec_from_file_location("e2e_harness", Path(__file__).with_name("conftest.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("e2e_harness", module)
    spec.loader.exec_module(module)
    return module


_h = _harness()
TERRAFORM, Api, StackInfo, Terraform, client_env = _h.TERRAFORM, _h.Api, _h.StackInfo, _h.Terraform, _h.client_env
TERRACE = Path(sys.executable).parent / "terrace"
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30  # generous under load; `bench` measures the real stop time


class Server:
    """`terrace serve` in its own process on `data` (the state dir too: dev.json, TLS, providers)."""

    def __init__(self, data: Path, port: int) -> None:
        self.data, self.port = data, port
        self.process: subprocess.Popen[str] | None = None
        self.log = data.parent / f"{data.name}-server.log"

    def start(self) -> Any:
        (self.data / "dev.json").unlink(missing_ok=True)
        out = self.log.open("a")
        self.process = subprocess.Popen(
            [str(TERRACE), "serve", "--data", str(self.data), "--port", str(self.port), "--organization", "restart"],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
        out.close()

        def described() -> dict[str, Any] | None:
            assert self.process is not None and self.process.poll() is None, self.output()
            try:
                info = json.loads((self.data / "dev.json").read_text())
            except (OSError, ValueError):
                return None
            return info if info.get("pid") == self.process.pid else None

        info = wait_for(described, START_TIMEOUT_S, what="the server to start")
        return StackInfo(
            **{k: info[k] for k in ("url", "hostname", "token", "organization", "ca_bundle", "cli_config")}
        )

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.process is not None
        self.process.send_signal(sig)
        code = self.process.wait(STOP_TIMEOUT_S)
        self.process = None
        return code

    def output(self) -> str:
        return self.log.read_text() if self.log.exists() else ""


@pytest.fixture
def server(free_port: int) -> Iterator[Server]:
    # not under pytest's 0700 base folder: job uids must reach the provider mirror
    root = traversable(Path(tempfile.mkdtemp(prefix="terrace-e2e-serve-")))
    (root / "data").mkdir()
    made = Server(root / "data", free_port)
    try:
        yield made
    finally:
        if made.process is not None and made.process.poll() is None:
            made.process.kill()
            made.process.wait()
        shutil.rmtree(root, ignore_errors=True)


def connect(stack: Any, home: Path, tmp: Path, name: str) -> tuple[Any, Any]:
    api = Api(stack)

    def make(main_tf: str = "", name: str = name) -> Any:
        path = tmp / name
        path.mkdir(exist_ok=True)
        tf = Terraform(path, client_env(stack, home))
        return tf.write(main_tf) if main_tf else tf

    return api, make


def log_text(api: Any, run_id: str, phase: str) -> str:
    url = api.request("GET", f"/api/v2/runs/{run_id}/{phase}").json()["data"]["attributes"]["log-read-url"]
    return api.http.get(url).text


def test_state_history_tokens_and_logs_survive_a_restart(server: Server, tmp_path: Path) -> None:
    assert TERRAFORM.exists(), f"the terraform test client is not installed at {TERRAFORM}"
    stack = server.start()
    api, make = connect(stack, tmp_path / "home", tmp_path, "work")
    ws_id = remote_workspace(api, "kept")
    tf = remote_dir(stack, make, "kept", TWO_RESOURCES)
    tf.apply(timeout=RUN_TIMEOUT_S)
    (applied,) = runs(api, ws_id)
    before = current_state(api, ws_id)
    user_id = api.request("GET", "/api/v2/account/details").json()["data"]["id"]
    body = {"data": {"type": "authentication-tokens", "attributes": {"description": "kept"}}}
    token = api.request("POST", f"/api/v2/users/{user_id}/authentication-tokens", body, expect=201).json()
    secret = token["data"]["attributes"]["token"]
    plan_log = log_text(api, applied["id"], "plan")
    sv = api.current_state_version(ws_id)
    state_before = api.http.get(sv["attributes"]["hosted-state-download-url"], follow_redirects=True).content
    api.http.close()

    output = ""
    code = server.stop(signal.SIGTERM)
    output = server.output()
    assert code == 0 and "Traceback" not in output, output

    again = server.start()
    assert again.token == stack.token  # the admin token of dev.json is kept too
    api2 = Api(again)
    assert api2.workspace("kept")["id"] == ws_id
    assert [r["id"] for r in runs(api2, ws_id)] == [applied["id"]]
    assert runs(api2, ws_id)[0]["attributes"]["status"] == "applied"
    assert current_state(api2, ws_id) == before
    sv2 = api2.current_state_version(ws_id)
    assert sv2["id"] == sv["id"]
    state_after = api2.http.get(sv2["attributes"]["hosted-state-download-url"], follow_redirects=True).content
    assert state_after == state_before and b"null_resource" in state_after
    assert log_text(api2, applied["id"], "plan") == plan_log and "null_resource.a" in plan_log
    with httpx.Client(verify=ssl.create_default_context(cafile=again.ca_bundle)) as client:
        me = client.get(f"{again.url}/api/v2/account/details", headers={"Authorization": f"Bearer {secret}"})
    assert me.status_code == 200 and me.json()["data"]["id"] == user_id
    # and it still runs: a second apply on the restarted server, on top of the kept state
    tf2 = remote_dir(again, connect(again, tmp_path / "home2", tmp_path, "work2")[1], "kept", TWO_RESOURCES)
    tf2.apply(timeout=RUN_TIMEOUT_S)
    api2.http.close()
    assert server.stop() == 0


def _ticking(marker: Path) -> str:
    command = f"echo start >> {marker}; while true; do echo tick >> {marker}; sleep 0.2; done"
    return f'resource "null_resource" "slow" {{\n  provisioner "local-exec" {{\n    command = "{command}"\n  }}\n}}\n'


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_a_server_stopped_mid_apply_ends_the_run_and_releases_the_lock(
    server: Server, tmp_path: Path, how: str
) -> None:
    """SIGKILL: the restarted server hands the job back. SIGTERM: the stopping server does (no traceback)."""
    assert TERRAFORM.exists(), f"the terraform test client is not installed at {TERRAFORM}"
    # below a folder that is not world-writable: the runner removes what a job uid left in world-writable
    # temporary folders (`sandbox.sweep_temp`)
    marker_dir = traversable(Path(tempfile.mkdtemp(prefix="terrace-e2e-marker-")))
    (marker_dir / "w").mkdir()
    (marker_dir / "w").chmod(0o1777)
    marker = marker_dir / "w" / f"provisioner-{uuid.uuid4().hex[:8]}.log"
    stack = server.start()
    api, make = connect(stack, tmp_path / "home", tmp_path, "work")
    ws_id = remote_workspace(api, "crashed")
    first = remote_dir(stack, make, "crashed", TWO_RESOURCES)
    first.apply(timeout=RUN_TIMEOUT_S)
    acknowledged = current_state(api, ws_id)  # the apply that finished: its state must survive the crash

    tf = first.write(stack.remote_backend(name="crashed") + TWO_RESOURCES + _ticking(marker))
    process = tf.start("apply", "-auto-approve", "-input=false", "-no-color")
    try:
        applying = wait_run(api, ws_id, {"applying"}, timeout=RUN_TIMEOUT_S, process=process)
        wait_for(lambda: marker.exists() and "tick" in marker.read_text(), 60, interval=0.1, what="the provisioner")
        assert server.process is not None
        code = server.stop(getattr(signal, how))
        if how == "SIGTERM":
            assert code == 0 and "Traceback" not in server.output(), server.output()
        api.http.close()

        again = server.start()
        api2 = Api(again)
        ended = wait_final(api2, applying["id"], timeout=RUN_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
        shutil.rmtree(marker_dir, ignore_errors=True)
    assert ended["attributes"]["status"] == "errored"
    workspace = api2.workspace("crashed")
    assert workspace["attributes"]["locked"] is False
    assert current_state(api2, ws_id)["serial"] >= acknowledged["serial"]
    assert current_state(api2, ws_id)["resources"]["null_resource.a"] == 1
    assert "interrupted" in log_text(api2, applying["id"], "apply")
    # the dead attempt's processes died with the server's runner
    wait_for(lambda: _ticks_stopped(marker), 30, interval=0.5, what="the dead attempt's provisioner to stop")
    api2.http.close()
    assert server.stop() == 0


def _ticks_stopped(marker: Path) -> bool:
    if not marker.exists():
        return True
    before = marker.stat().st_size
    time.sleep(1.0)
    return marker.stat().st_size == before
