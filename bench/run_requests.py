"""What one remote run asks of the API, counted by who asks and what: the figures `bench.cost` prices per run.

`python -m bench.run_requests` runs `terraform apply -auto-approve` (the newest terraform this machine has, `cloud`
block) in a workspace of the embedded stack whose runners are set as on AWS (short polls every 2 s, brisk for 10 s
after a job, exit after 10 s idle while a plan waits for its apply and at once when its run is done, job output not
echoed), and counts every request at the app (`Recorder`): the CLI's own (but its log reads), its log reads, and the
runner's by route, for the plan and the apply and in all. The
configuration's apply prints a line a second for `--seconds` (a provider that refreshes and creates for a while),
so the per-second rates of log PUTs and heartbeats show. It also says which runner planned and which applied.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import time
from collections import Counter
from pathlib import Path

from bench.client_timeline import Recorder
from bench.common import Api, local_stack, unique
from bench.run_overhead import PROVIDERS, WorkDir, terraform_env

CONFIG = """
resource "null_resource" "slow" {
  triggers = { stamp = "%(stamp)s" }
  provisioner "local-exec" {
    command = "for i in $(seq 1 %(seconds)d); do echo tick $i; sleep 1; done"
  }
}
"""
# what a runner on AWS is told (infra/runner.py); the local stack's runners long-poll instead
AWS_RUNNER_ENV = {
    "TERRACE_RUNNER_WAIT_S": "0",
    "TERRACE_RUNNER_POLL_INTERVAL_S": "2",
    "TERRACE_RUNNER_IDLE_EXIT_S": "10",
    "TERRACE_RUNNER_DONE_EXIT_S": "0",
    "TERRACE_RUNNER_ECHO_OUTPUT": "false",
}
RUNNER_ROUTE = re.compile(r"^/api/runner/(?:jobs/(?P<job>[^/]+)/(?P<what>[a-z-]+)|(?P<top>[a-z-]+(?:/next)?))$")


def classify(method: str, path: str, from_cli: bool) -> tuple[str, str]:
    """(who, what) of one request: the CLI's log reads apart from its other requests; the runner's by route, with
    the phase its job id names (`plan-...`, `apply-...`)."""
    if path.startswith("/api/v2/logs/"):
        return "cli", "log read"
    if from_cli:
        return "cli", "other"
    match = RUNNER_ROUTE.match(path)
    if match is None:
        return "other", f"{method} {path.split('?')[0][:40]}"
    if match["job"]:
        phase = match["job"].split("-", 1)[0]
        return f"runner {phase}", match["what"]
    return "runner", match["top"]


def measure(seconds: int, binary: Path, auto_apply: bool = True) -> dict[str, object]:
    recorder = Recorder()
    with local_stack(execution_mode="remote", backend="embedded", wrap_app=recorder.wrap) as stack:
        recorder.cli_token(stack.token)
        assert stack.local.launcher is not None
        stack.local.launcher.env.update(AWS_RUNNER_ENV)
        api = Api(stack)
        name = unique("requests")
        api.create_workspace(name, **{"execution-mode": "remote", "auto-apply": auto_apply})
        block = (
            "terraform {\n" + PROVIDERS + "  cloud {\n"
            f'    hostname = "{stack.hostname}"\n    organization = "{stack.organization}"\n'
            f'    workspaces {{\n      name = "{name}"\n    }}\n  }}\n}}\n'
        )
        work = WorkDir(stack.state_dir / "work", terraform_env(stack), block, binary)
        (work.path / "main.tf").write_text(block + CONFIG % {"stamp": "init", "seconds": seconds})
        work.terraform("init", "-input=false")
        (work.path / "main.tf").write_text(block + CONFIG % {"stamp": "measured", "seconds": seconds})
        started = time.time()
        elapsed = work.terraform("apply", "-auto-approve", "-input=false")
        # the runner's last polls: it exits at its first empty answer once its run is done (TERRACE_RUNNER_DONE_EXIT_S)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(r.process.poll() is None for r in stack.local.launcher.runners):
            time.sleep(0.2)
        requests = recorder.window(started, time.time())
        counts: Counter[tuple[str, str]] = Counter(classify(r.method, r.path, r.from_cli) for r in requests)
        started_runners = len(stack.local.launcher.started)
        api.close()
    by_who: Counter[str] = Counter()
    for (who, _), n in counts.items():
        by_who[who] += n
    return {
        "client": str(binary),
        "apply_seconds": round(elapsed, 2),
        "tick_seconds": seconds,
        "auto_apply": auto_apply,
        "requests": {f"{who}: {what}": n for (who, what), n in sorted(counts.items())},
        "by_who": dict(sorted(by_who.items())),
        "runner_processes_started": started_runners,  # one: the apply ran on the plan's runner, in its folder
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run_requests", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20, help="how long the apply prints a line a second")
    parser.add_argument("--binary", type=Path, default=Path(shutil.which("terraform") or "terraform"))
    parser.add_argument("--confirm", action="store_true", help="a workspace without auto-apply (the CLI confirms)")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.seconds, args.binary, auto_apply=not args.confirm), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
