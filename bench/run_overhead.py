"""`terraform apply -auto-approve` and a speculative `terraform plan` through Terrace (remote execution, warm
runner) vs the local backend.

The same configuration (2 null_resources + an output) runs with both; every apply changes a trigger so
both replace the two resources each time. One run is broken down with the run's and its phases'
status timestamps (the stack runs on this machine, so server timestamps and client clocks agree).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from terrace.domain import tool_versions
from terrace.local import tool_catalog
from terrace.local.terraform_config import terraform_env as client_env
from terrace.runner.commands import detect_version

from bench.client_timeline import Recorder, split
from bench.common import TERRAFORM, Api, Outcome, Size, Stack, local_stack, median, unique
from bench.run_breakdown import breakdown, plan_breakdown

CONFIG = """
resource "null_resource" "a" {
  triggers = { stamp = "%(stamp)s" }
}

resource "null_resource" "b" {
  triggers = { stamp = "%(stamp)s", a = null_resource.a.id }
}

output "ids" {
  value = [null_resource.a.id, null_resource.b.id]
}
"""
TARGET_ADDED_S = 2.0
TARGET_PLAN_ADDED_S = 1.5


class WorkDir:
    def __init__(self, path: Path, env: dict[str, str], backend: str = "", binary: Path = TERRAFORM) -> None:
        self.path, self.env, self.backend, self.binary = path, env, backend, binary
        path.mkdir(parents=True)

    def terraform(self, *args: str, timeout: float = 300) -> float:
        start = time.perf_counter()
        done = subprocess.run(
            [str(self.binary), *args, "-no-color"],
            cwd=self.path,
            env=self.env,
            text=True,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"terraform {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return elapsed

    def plan(self, stamp: str) -> tuple[float, float]:
        """Rewrite the config with a new trigger, plan (speculative when remote); (epoch at start, seconds)."""
        (self.path / "main.tf").write_text(self.backend + CONFIG % {"stamp": stamp})
        started = time.time()
        return started, self.terraform("plan", "-input=false")

    def apply(self, stamp: str) -> tuple[float, float]:
        """Rewrite the config with a new trigger, apply; (epoch at start, seconds)."""
        (self.path / "main.tf").write_text(self.backend + CONFIG % {"stamp": stamp})
        started = time.time()
        return started, self.terraform("apply", "-auto-approve", "-input=false")


def terraform_env(stack: Stack) -> dict[str, str]:
    home = stack.state_dir / "home"
    home.mkdir(exist_ok=True)
    return client_env(stack.cli_config, stack.ca_bundle, home)


def remote_backend(stack: Stack, name: str) -> str:
    return (
        'terraform {\n  backend "remote" {\n'
        f'    hostname     = "{stack.hostname}"\n    organization = "{stack.organization}"\n'
        f'    workspaces {{\n      name = "{name}"\n    }}\n  }}\n}}\n'
    )


# an explicit source: OpenTofu would look for hashicorp/null in its own registry, and the stack's CLI configuration
# mirrors registry.terraform.io only (the benchmark runs offline)
PROVIDERS = '  required_providers {\n    null = { source = "registry.terraform.io/hashicorp/null" }\n  }\n'


def cloud_block(stack: Stack, name: str) -> str:
    return (
        "terraform {\n" + PROVIDERS + "  cloud {\n"
        f'    hostname     = "{stack.hostname}"\n    organization = "{stack.organization}"\n'
        f'    workspaces {{\n      name = "{name}"\n    }}\n  }}\n}}\n'
    )


def clients() -> list[tuple[str, Path]]:
    """(label, binary) of each client this machine has: terraform 1.0.3 (the venv's, `remote` backend) always; the
    other binaries `make dev`'s tool catalog finds (a current terraform on PATH, OpenTofu) with the `cloud` block."""
    found = [("terraform 1.0.3 (remote backend)", TERRAFORM)]
    seen = {TERRAFORM.resolve()}
    for tool, path in tool_catalog.candidates():
        binary = Path(path)
        if not os.access(binary, os.X_OK) or binary.resolve() in seen:
            continue
        seen.add(binary.resolve())
        version = detect_version(path)
        if version and version != "1.0.3":
            found.append((f"{tool_versions.BINARY_NAMES[tool]} {version} (cloud block)", binary))
    return found


def run(size: Size = Size.FULL) -> Outcome:
    outcome = Outcome("run_overhead")
    repeats = size.pick(full=4, quick=2, smoke=1)
    other_clients = clients()[1 : size.pick(full=None, quick=None, smoke=2)]  # smoke: the first found only
    warm_up = size is not Size.SMOKE
    recorder = Recorder()
    with local_stack(execution_mode="remote", backend="embedded", wrap_app=recorder.wrap) as stack:
        recorder.cli_token(stack.token)
        api = Api(stack)
        env = terraform_env(stack)
        name = unique("overhead")
        ws_id = api.create_workspace(name, **{"execution-mode": "remote", "auto-apply": True})["id"]
        remote = WorkDir(stack.state_dir / "remote", env, remote_backend(stack, name))
        local = WorkDir(stack.state_dir / "local", env)
        warm(remote, local, apply=warm_up)  # the remote warm-up starts the runner; the measured runs find it warm
        applies = measure_pairs(recorder, local.apply, remote.apply, repeats, "apply")
        last = breakdown(api, ws_id, *applies.last)
        plans = measure_pairs(recorder, local.plan, remote.plan, repeats, "plan")
        last_plan = plan_breakdown(api, ws_id, *plans.last)
        others = [
            _other_client(stack, api, recorder, label, binary, min(2, repeats), warm_up)
            for label, binary in other_clients
        ]
        # the same plans without a cost estimate: terraform's remote backend waits >= 1 s before its first read
        # of a run's cost estimate, a client-side wait no server speed removes
        settings = {"data": {"type": "organizations", "attributes": {"cost-estimation-enabled": False}}}
        api.data("PATCH", f"/api/v2/organizations/{stack.organization}", settings)
        plan_no_ce_s = [remote.plan(f"plan-no-ce-{n}")[1] for n in range(repeats)]
        apply_no_ce_s = [remote.apply(f"apply-no-ce-{n}")[1] for n in range(repeats)]
        api.close()
    moto = _moto_applies(size.pick(full=3, quick=2, smoke=1), warm_up)
    r, b = median(applies.remote_s), median(applies.local_s)
    outcome.row("terraform apply (2 null_resources)", r, b, target="")
    outcome.row("apply added seconds", r - b, target=f"<= {TARGET_ADDED_S:.1f} s", note="embedded server")
    outcome.row("  of which Terrace's share", applies.share("terrace_s"), target="", note=SHARE_NOTE)
    outcome.row("  the CLI's own time (startup, upload, fixed poll sleeps)", applies.share("cli_own_s"), b, target="")
    outcome.row("  polls that found nothing new", applies.share("unready_polls"), unit="", target="0")
    outcome.row("apply added seconds, no cost estimate", median(apply_no_ce_s) - b, target="")
    pr, pb = median(plans.remote_s), median(plans.local_s)
    outcome.row("speculative terraform plan", pr, pb, target="")
    outcome.row("plan added seconds", pr - pb, target=f"<= {TARGET_PLAN_ADDED_S:.1f} s")
    outcome.row("  of which Terrace's share", plans.share("terrace_s"), target="", note=SHARE_NOTE)
    outcome.row("  polls that found nothing new", plans.share("unready_polls"), unit="", target="0")
    outcome.row("plan added seconds, no cost estimate", median(plan_no_ce_s) - pb, target="")
    for label, other in others:
        outcome.row(f"apply added seconds, {label}", other["added_s"], target="")
        outcome.row(f"  of which Terrace's share, {label}", other["terrace_s"], target="")
    outcome.row("apply added seconds, moto backend", moto["added_s"], target="", note="the AWS adapters on moto")
    outcome.row("  of which Terrace's share, moto backend", moto["terrace_s"], target="")
    raw = last.pop("_raw")
    outcome.details = {
        "remote_s": applies.remote_s,
        "local_s": applies.local_s,
        "apply_shares": applies.shares,
        "breakdown_last_run_s": last,
        "timestamps": raw,
        "plan_remote_s": plans.remote_s,
        "plan_local_s": plans.local_s,
        "plan_shares": plans.shares,
        "plan_breakdown_last_run_s": last_plan,
        "plan_no_cost_estimate_s": plan_no_ce_s,
        "apply_no_cost_estimate_s": apply_no_ce_s,
        "other_clients": dict(others),
        "moto": moto,
    }
    outcome.notes.append("where one remote apply's time goes: " + "; ".join(f"{k}: {v:.2f}s" for k, v in last.items()))
    outcome.notes.append(
        "where one speculative plan's time goes: " + "; ".join(f"{k}: {v:.2f}s" for k, v in last_plan.items())
    )
    return outcome


SHARE_NOTE = "the CLI's requests in flight + its sleeps after polls that found nothing new"


def _other_client(
    stack: Stack, api: Api, recorder: Recorder, label: str, binary: Path, repeats: int, warm_up: bool
) -> tuple[str, dict[str, float]]:
    """A current client with the `cloud` block: median added seconds over `repeats` applies, and Terrace's share."""
    name = unique("overhead-cloud")
    local_block = "terraform {\n" + PROVIDERS + "}\n"
    backend = cloud_block(stack, name)
    return label, _paired_applies(stack, api, recorder, name, backend, local_block, binary, repeats, warm_up)


def _moto_applies(repeats: int, warm_up: bool) -> dict[str, float]:
    """The same applies on the AWS adapters over moto (every table and bucket call is an HTTP call to moto)."""
    recorder = Recorder()
    with local_stack(execution_mode="remote", wrap_app=recorder.wrap) as stack:
        recorder.cli_token(stack.token)
        api = Api(stack)
        name = unique("overhead-moto")
        try:
            backend = remote_backend(stack, name)
            return _paired_applies(stack, api, recorder, name, backend, "", TERRAFORM, repeats, warm_up)
        finally:
            api.close()


def _paired_applies(
    stack: Stack,
    api: Api,
    recorder: Recorder,
    name: str,
    backend: str,
    local_block: str,
    binary: Path,
    repeats: int,
    warm_up: bool = True,
) -> dict[str, float]:
    """Warm remote and local working directories of one client, then `repeats` local/remote apply pairs: median
    added seconds and Terrace's share."""
    env = terraform_env(stack)
    api.create_workspace(name, **{"execution-mode": "remote", "auto-apply": True})
    remote = WorkDir(stack.state_dir / f"remote-{name}", env, backend, binary)
    local = WorkDir(stack.state_dir / f"local-{name}", env, local_block, binary)
    warm(remote, local, apply=warm_up)
    pairs = measure_pairs(recorder, local.apply, remote.apply, repeats, "apply")
    return {
        "added_s": median([r - b for r, b in zip(pairs.remote_s, pairs.local_s, strict=True)]),
        "terrace_s": pairs.share("terrace_s"),
    }


Operation = Callable[[str], tuple[float, float]]  # WorkDir.apply / .plan: stamp -> (epoch at start, seconds)


@dataclass
class Pairs:
    """Local/remote pairs of one operation: their seconds, Terrace's share of each remote one, the last one's window."""

    local_s: list[float] = field(default_factory=list)
    remote_s: list[float] = field(default_factory=list)
    shares: list[dict[str, float]] = field(default_factory=list)
    last: tuple[float, float] = (0.0, 0.0)  # (epoch at start, seconds) of the last remote one

    def share(self, key: str) -> float:
        return median([share[key] for share in self.shares])


def measure_pairs(recorder: Recorder, local: Operation, remote: Operation, repeats: int, what: str) -> Pairs:
    """`repeats` times the local operation, then the remote one (each with a new trigger)."""
    pairs = Pairs()
    for n in range(repeats):
        pairs.local_s.append(local(f"local-{what}-{n}")[1])
        started, elapsed = remote(f"remote-{what}-{n}")
        pairs.remote_s.append(elapsed)
        pairs.shares.append(split(recorder, started, elapsed))
        pairs.last = (started, elapsed)
    return pairs


def warm(*workdirs: WorkDir, apply: bool = True) -> None:
    """Each working directory initialized, then one apply in each (a remote one starts the runner process) unless
    not `apply` (the smoke size: its first measured apply starts the runner)."""
    for wd in workdirs:
        (wd.path / "main.tf").write_text(wd.backend + CONFIG % {"stamp": "init"})
        wd.terraform("init", "-input=false")
    for wd in workdirs if apply else ():
        wd.apply("warm-up")
