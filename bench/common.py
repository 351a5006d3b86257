"""Shared pieces of the benchmarks: an in-process LocalStack, a JSON:API client, timing and memory helpers.

Every benchmark reports a ratio against a baseline measured in the same run on the same machine
(machines are shared and noisy, so absolute numbers mean little on their own).
"""

from __future__ import annotations

import enum
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from bench import ratelimit

JSONAPI = "application/vnd.api+json"
BENCH_DIR = Path(__file__).resolve().parent
TERRAFORM = Path(os.environ.get("TERRACE_TF_BINARY") or Path(sys.prefix) / "bin" / "terraform")
T = TypeVar("T")


class Size(enum.Enum):
    """How much a benchmark measures. FULL: `python -m bench` (`make bench`); QUICK: `--quick`, fewer repetitions
    and smaller loads; SMOKE: `--smoke`, every step of the benchmark once at the smallest sizes, in seconds, its
    figures meaningless: `make test` runs each benchmark so (tests/*/test_bench_smoke*.py), so that a change that
    breaks a benchmark fails there, not in the next `make bench`."""

    FULL = "full"
    QUICK = "quick"
    SMOKE = "smoke"

    def pick(self, full: T, quick: T, smoke: T) -> T:
        """This size's value of a parameter."""
        return {Size.FULL: full, Size.QUICK: quick, Size.SMOKE: smoke}[self]


@dataclass
class Outcome:
    """What one benchmark measured: rows for the table and everything else for the JSON file."""

    name: str
    rows: list[dict[str, Any]] = field(default_factory=list)  # metric, value, baseline, ratio, target, note
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def row(
        self,
        metric: str,
        value: float | str,
        baseline: float | str | None = None,
        *,
        unit: str = "s",
        target: str = "",
        note: str = "",
        ratio: float | None = None,
    ) -> None:
        """A row; its ratio is value / baseline unless given (a paired benchmark's median of its pairs' ratios)."""
        if ratio is None and isinstance(value, float | int) and isinstance(baseline, float | int) and baseline:
            ratio = value / baseline
        self.rows.append(
            {
                "metric": metric,
                "value": value,
                "baseline": baseline,
                "ratio": ratio,
                "unit": unit,
                "target": target,
                "note": note,
            }
        )


@dataclass
class Stack:
    """A started LocalStack plus what clients need."""

    local: Any
    url: str
    hostname: str
    token: str
    organization: str
    ca_bundle: str
    cli_config: str
    state_dir: Path
    registry_hostname: str = ""  # module sources' host (dev.json)

    def api(self, **kwargs: Any) -> Api:
        return Api(self, **kwargs)

    stopped: bool = False

    def stop(self) -> None:
        self.local.stop()
        self.stopped = True


@contextmanager
def local_stack(
    *,
    workers: bool = True,
    execution_mode: str = "local",
    backend: str = "moto",
    wrap_app: Any = None,
    **overrides: Any,
) -> Iterator[Stack]:
    """A fresh in-process LocalStack (HTTPS API + runners; on moto, or `backend="embedded"` on SQLite and files)
    on a free port, stopped afterwards. `wrap_app` wraps the ASGI app (e.g. `client_timeline.Recorder.wrap`)."""
    from terrace.local.stack import LocalStack

    with tempfile.TemporaryDirectory(prefix="terrace-bench-") as tmp:
        Path(tmp).chmod(0o711)  # job uids pass through to the runner work dir and provider mirror (not list it)
        local = LocalStack(
            port=0,
            organization="bench",
            state_dir=Path(tmp) / "terrace",
            prefix=f"bench-{uuid.uuid4().hex[:8]}",
            workers=workers,
            data_dir=Path(tmp) / "terrace" / "data" if backend == "embedded" else None,
            wrap_app=wrap_app,
        )
        # the benches measure the server: TFC's per-token request limit (which one token shared by many benchmark
        # clients exceeds at once) is off unless a benchmark or TERRACE_BENCH_RATE_LIMIT_PER_S (30: TFC's) asks for
        # it; every bench client honours a 429 anyway (`bench/ratelimit.py`)
        if not workers:  # the events consumer is on the data path (an upload's landing finalizes its version)
            from terrace.local import workers as local_workers

            local.background_tasks = [local_workers.events]
        limit = int(os.environ.get("TERRACE_BENCH_RATE_LIMIT_PER_S") or 0)
        # and runs use the versions the runners hold (`latest`: the newest of them), never a release download
        local.settings_overrides.update({"api_rate_limit_per_s": limit, "tool_downloads": False, **overrides})
        info = local.start()
        stack = Stack(local=local, state_dir=Path(tmp), **info.as_dict())
        try:
            stack.api().request(
                "PATCH",
                f"/api/v2/organizations/{stack.organization}",
                {"data": {"type": "organizations", "attributes": {"default-execution-mode": execution_mode}}},
            )
            yield stack
        finally:
            if not stack.stopped:
                local.stop()


class Api:
    """A thin JSON:API client over httpx (one connection pool per instance; not shared across threads)."""

    def __init__(self, stack: Stack, timeout: float = 120) -> None:
        self.stack = stack
        self.http = ratelimit.client(  # a 429 is waited out and sent again, as go-tfe does
            base_url=stack.url,
            verify=stack.ca_bundle,
            timeout=timeout,
            headers={"Authorization": f"Bearer {stack.token}", "Accept": JSONAPI},
        )

    def close(self) -> None:
        self.http.close()

    def request(
        self, method: str, path: str, body: Any = None, expect: int | tuple[int, ...] = (200, 201)
    ) -> httpx.Response:
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs = {"json": body, "headers": {"Content-Type": JSONAPI}}
        response = self.http.request(method, path, **kwargs)
        expected = (expect,) if isinstance(expect, int) else expect
        if response.status_code not in expected:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:500]}")
        return response

    def data(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        found: dict[str, Any] = self.request(method, path, body).json()["data"]
        return found

    def create_workspace(self, name: str, **attributes: Any) -> dict[str, Any]:
        body = {"data": {"type": "workspaces", "attributes": {"name": name, **attributes}}}
        return self.data("POST", f"/api/v2/organizations/{self.stack.organization}/workspaces", body)

    def new_token(self, description: str = "bench") -> str:
        """A fresh user token of the stack's admin: clients that would exceed TFC's per-token limit together
        (30 requests per second) each get their own, as separate people or pipelines have."""
        user_id = self.data("GET", "/api/v2/account/details")["id"]
        body = {"data": {"type": "authentication-tokens", "attributes": {"description": description}}}
        return str(self.data("POST", f"/api/v2/users/{user_id}/authentication-tokens", body)["attributes"]["token"])

    def lock(self, workspace_id: str) -> None:
        self.request(
            "POST",
            f"/api/v2/workspaces/{workspace_id}/actions/lock",
            {"data": {"type": "", "attributes": {"reason": "bench"}}},
        )

    def unlock(self, workspace_id: str) -> None:
        self.request("POST", f"/api/v2/workspaces/{workspace_id}/actions/unlock", {})


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# timing ----------------------------------------------------------------------------------------
@contextmanager
def timed(into: dict[str, float], key: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        into[key] = into.get(key, 0.0) + time.perf_counter() - start


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def parse_iso(value: str | None) -> float | None:
    """Epoch seconds of Terrace's `YYYY-MM-DDTHH:MM:SS.fffZ` timestamps."""
    if not value:
        return None
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


# memory ----------------------------------------------------------------------------------------
def rss_bytes() -> int:
    text = Path("/proc/self/status").read_text()
    found = re.search(r"^VmRSS:\s+(\d+)\s+kB", text, re.MULTILINE)
    return int(found.group(1)) * 1024 if found else 0


class RssSampler:
    """Samples this process's resident set size on a background thread; `growth` = peak - start."""

    def __init__(self, interval_s: float = 0.005) -> None:
        self.interval_s = interval_s
        self.start = self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> RssSampler:
        self.start = self.peak = rss_bytes()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.peak = max(self.peak, rss_bytes())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak = max(self.peak, rss_bytes())

    @property
    def growth(self) -> int:
        return self.peak - self.start


MB = 1024 * 1024
