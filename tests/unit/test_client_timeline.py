"""bench/client_timeline.py: which requests are the CLI's, which polls found nothing new, and Terrace's share."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Response
from fastapi.testclient import TestClient

REPO = str(Path(__file__).resolve().parents[2])
if REPO not in sys.path:  # bench/ is a top-level package of the repository, not of the installed project
    sys.path.insert(0, REPO)

from bench.client_timeline import Recorder, Request, split  # noqa: E402

STATUS: dict[str, str] = {}


def _app() -> FastAPI:
    app = FastAPI()

    def document(status: str) -> Response:
        body = json.dumps({"data": {"attributes": {"status": status}}})
        return Response(body, media_type="application/json")

    @app.get("/api/v2/{kind}/{ident}")
    def read(kind: str, ident: str) -> Response:
        return document(STATUS[kind])

    @app.get("/api/v2/logs/{phase}/{expires}/{signature}")
    def log(phase: str, expires: str, signature: str) -> Response:
        return Response(STATUS["logs"].encode(), media_type="text/plain")

    return app


def _recorded(**status: str) -> tuple[Recorder, TestClient]:
    STATUS.clear()
    STATUS.update(status)
    recorder = Recorder()
    recorder.cli_token("cli")
    return recorder, TestClient(recorder.wrap(_app()))  # type: ignore[arg-type]


def _get(client: TestClient, path: str, token: str = "cli") -> Any:
    return client.get(path, headers={"Authorization": f"Bearer {token}"})


def test_polls_that_find_nothing_new_are_told_apart_from_answers() -> None:
    recorder, client = _recorded(
        **{"configuration-versions": "pending", "cost-estimates": "queued", "runs": "pending", "logs": ""}
    )
    for path in ("/api/v2/configuration-versions/cv-1", "/api/v2/cost-estimates/ce-1", "/api/v2/runs/run-1"):
        _get(client, path)
    STATUS.update({"configuration-versions": "uploaded", "cost-estimates": "finished", "runs": "plan_queued"})
    for path in ("/api/v2/configuration-versions/cv-1", "/api/v2/cost-estimates/ce-1", "/api/v2/runs/run-1"):
        _get(client, path)
    _get(client, "/api/v2/logs/plan-1/9/sig")  # an empty read that was not held: the end of a finished log
    _get(client, "/api/v2/runs/run-1", token="run-token")  # the runner's terraform, not the CLI
    requests = recorder.window(0, float("inf"))
    assert [r.unready for r in requests if r.from_cli] == [True, True, True, False, False, False, False]
    assert [r.from_cli for r in requests][-1] is False


def test_terraces_share_is_the_requests_in_flight_and_the_sleep_after_a_poll_that_found_nothing() -> None:
    recorder = Recorder()
    recorder.requests = [
        Request(100.0, 100.1, "POST", "/api/v2/runs", True, False),
        Request(100.05, 100.2, "GET", "/api/v2/plans/plan-1", True, False),  # overlaps: counted once
        Request(101.0, 101.3, "GET", "/api/v2/runs/run-1", True, True),  # nothing new: the CLI sleeps again
        Request(101.2, 101.6, "GET", "/api/v2/workspaces/ws-1", False, False),  # the runner's: not counted
        Request(102.5, 102.6, "GET", "/api/v2/runs/run-1", True, False),
    ]
    share = split(recorder, 100.0, 3.0)
    assert round(share["in_flight_s"], 6) == round(0.2 + 0.3 + 0.1, 6)
    assert round(share["terrace_s"], 6) == round(0.6 + 1.2, 6)  # + 101.3 -> 102.5
    assert round(share["cli_own_s"], 6) == round(3.0 - 1.8, 6)
    assert share["unready_polls"] == 1 and share["cli_requests"] == 4
