"""`python -m bench.run_requests` counts a run's requests by who sends them: the figures `bench.cost` prices."""

from __future__ import annotations

from bench.run_requests import classify


def test_each_request_is_counted_for_who_sent_it() -> None:
    assert classify("GET", "/api/v2/logs/plan-abc/1700000000/sig", from_cli=True) == ("cli", "log read")
    assert classify("GET", "/api/v2/runs/run-abc", from_cli=True) == ("cli", "other")
    assert classify("POST", "/api/runner/jobs/next", from_cli=False) == ("runner", "jobs/next")
    assert classify("POST", "/api/runner/enroll", from_cli=False) == ("runner", "enroll")
    assert classify("PUT", "/api/runner/jobs/apply-abc/logs", from_cli=False) == ("runner apply", "logs")
    assert classify("POST", "/api/runner/jobs/plan-abc/upload-urls", from_cli=False) == ("runner plan", "upload-urls")
    # the job's terraform (its run token) through its backend
    assert classify("GET", "/api/v2/ping", from_cli=False) == ("other", "GET /api/v2/ping")
