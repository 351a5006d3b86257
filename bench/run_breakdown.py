"""Where one remote run's seconds went, stretch by stretch, from its status timestamps and the client's clock (the
stack runs on this machine, so they agree): `bench/run_overhead.py` prints it for its last apply and plan."""

from __future__ import annotations

from bench.common import Api, parse_iso


def breakdown(api: Api, ws_id: str, started: float, elapsed: float) -> dict[str, float]:
    """Seconds spent in each stretch of the latest run of a workspace, from its status timestamps."""
    run = api.request("GET", f"/api/v2/workspaces/{ws_id}/runs?page[size]=1").json()["data"][0]
    plan = api.data("GET", f"/api/v2/plans/{run['relationships']['plan']['data']['id']}")
    apply = api.data("GET", f"/api/v2/applies/{run['relationships']['apply']['data']['id']}")
    rt, pt, at = (x["attributes"]["status-timestamps"] for x in (run, plan, apply))
    points: list[tuple[str, float | None]] = [
        ("client start -> run created (init, config upload)", parse_iso(run["attributes"]["created-at"])),
        ("run created -> plan queued", parse_iso(pt.get("queued-at"))),
        ("plan queued -> running (runner pick-up)", parse_iso(pt.get("running-at") or pt.get("started-at"))),
        ("plan running -> finished (terraform plan on runner)", parse_iso(pt.get("finished-at"))),
        ("plan finished -> apply queued (auto-apply)", parse_iso(at.get("queued-at"))),
        ("apply queued -> running (runner pick-up)", parse_iso(at.get("running-at") or at.get("started-at"))),
        ("apply running -> finished (terraform apply on runner)", parse_iso(at.get("finished-at"))),
        ("apply finished -> run applied", parse_iso(rt.get("applied-at"))),
    ]
    out = _stretches(points, started, elapsed, "run applied -> client exits (log/state polling)")
    out["_raw"] = {"run": rt, "plan": pt, "apply": at}  # type: ignore[assignment]
    return out


def plan_breakdown(api: Api, ws_id: str, started: float, elapsed: float) -> dict[str, float]:
    """Seconds spent in each stretch of the latest (speculative) run of a workspace."""
    run = api.request("GET", f"/api/v2/workspaces/{ws_id}/runs?page[size]=1").json()["data"][0]
    plan = api.data("GET", f"/api/v2/plans/{run['relationships']['plan']['data']['id']}")
    rt, pt = run["attributes"]["status-timestamps"], plan["attributes"]["status-timestamps"]
    points: list[tuple[str, float | None]] = [
        ("client start -> run created (init, config upload)", parse_iso(run["attributes"]["created-at"])),
        ("run created -> plan queued", parse_iso(pt.get("queued-at"))),
        ("plan queued -> running (runner pick-up)", parse_iso(pt.get("running-at") or pt.get("started-at"))),
        ("plan running -> finished (terraform plan on runner)", parse_iso(pt.get("finished-at"))),
        ("plan finished -> run planned_and_finished", parse_iso(rt.get("planned-and-finished-at"))),
    ]
    return _stretches(points, started, elapsed, "run finished -> client exits (log polling)")


def _stretches(points: list[tuple[str, float | None]], started: float, elapsed: float, last: str) -> dict[str, float]:
    """Seconds from each stamped moment to the next (moments not reached are skipped), then to the client's exit."""
    out: dict[str, float] = {}
    previous = started
    for label, moment in points:
        if moment is not None:
            out[label] = moment - previous
            previous = moment
    out[last] = started + elapsed - previous
    return out
