"""The api function publishes the audit recorder's failed writes as the `AuditWriteFailures` metric (Powertools
Metrics' EMF in its log) after an invocation, once per rise of the count, nothing while it does not rise."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from functions.api import handler


def emf(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{") and "_aws" in line]


def test_a_rise_of_the_failure_count_is_published_once(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Terrace")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "terrace-api")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    recorder = SimpleNamespace(failures=0)
    monkeypatch.setattr(handler, "_container", SimpleNamespace(audit_recorder=recorder))
    monkeypatch.setattr(handler, "_published_failures", 0)

    assert handler.publish_audit_failures() == 0
    assert emf(capsys.readouterr().out) == []
    recorder.failures = 2
    assert handler.publish_audit_failures() == 2
    [published] = emf(capsys.readouterr().out)
    assert published["AuditWriteFailures"] == [2.0]
    assert published["service"] == "terrace-api"
    [directive] = published["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "Terrace"
    assert directive["Metrics"] == [{"Name": "AuditWriteFailures", "Unit": "Count"}]
    assert handler.publish_audit_failures() == 0  # no rise: nothing again
    assert emf(capsys.readouterr().out) == []
    recorder.failures = 3
    assert handler.publish_audit_failures() == 1
