"""The audit trail's daily export, in memory: the reaper writes one JSON-lines object per organization and day that
equals the API's events of that day; writing a day again gives the same object; an export is claimed once per
interval; an export after a stop catches up the days it missed; objects past the retention setting are deleted."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from audit_helpers import Env, day_of_actions, today
from fastapi.testclient import TestClient
from terrace.bootstrap import build_memory
from terrace.config import Settings
from terrace.domain import clock
from terrace.domain.audit import Actor, AuditEvent
from terrace.domain.principal import PrincipalKind
from terrace.services.audit.export import AuditExport, object_key
from terrace.web.app import create_app

DAY_S = 86400


@pytest.fixture(scope="module")
def env() -> Env:
    settings = Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s", audit_retention_days=30)
    return day_of_actions(build_memory(settings))


def test_the_reaper_exports_the_day_as_the_api_answers_it(env: Env) -> None:
    env.container.reaper.reap_once()
    exported = env.exported("acme", today())
    assert exported == env.api_day("/api/v2/organizations/acme/audit-trail", today())
    actions = [event["resource"]["action"] for event in exported]
    assert {"workspace.create", "variable.create", "workspace.lock"} <= set(actions)
    assert "secret" not in json.dumps(exported)
    assert env.container.reaper.reap_once() is not None  # the export is claimed once an hour: not due again
    assert env.container.audit_export.sweep_if_due() is None


def test_writing_a_day_again_gives_the_same_object(env: Env) -> None:
    key = object_key("acme", today())
    assert env.container.audit_export.export_day(today())[0] >= 1
    first = env.container.blobs.get(key)
    assert env.container.audit_export.export_day(today())[0] >= 1
    assert env.container.blobs.get(key) == first
    assert first.endswith(b"\n") and first.count(b"\n") == len(env.exported("acme", today()))


def test_the_sites_own_events_have_their_folder() -> None:
    container = build_memory(Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s"))
    user = container.accounts.create_user("root", "root@example.com", site_admin=True)
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    site = Env(container, TestClient(create_app(container)),
               {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"})  # fmt: skip
    body = {"data": {"type": "authentication-tokens", "attributes": {"description": "ci"}}}
    made = site.client.post(f"/api/v2/users/{user.id}/authentication-tokens", json=body, headers=site.headers)
    assert made.status_code == 201, made.text
    objects, events = container.audit_export.export_day(today())
    assert objects == 1 and events >= 1
    assert object_key("", today()) == f"audit/_site/{today():%Y/%m/%d}.jsonl"
    assert site.exported("", today()) == site.api_day("/api/v2/admin/audit-trail", today())


def test_a_later_export_catches_up_and_deletes_what_the_retention_no_longer_keeps() -> None:
    env = day_of_actions(build_memory(Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s")))
    start = datetime.combine(today(), datetime.min.time(), UTC).timestamp()
    store, blobs, orgs = env.container.audit_store, env.container.blobs, env.container.organizations
    assert AuditExport(store, blobs, orgs, retention_days=30, now=lambda: start + 60).sweep_if_due() is not None
    three_days_on = AuditExport(store, blobs, orgs, retention_days=30, now=lambda: start + 3 * DAY_S + 60)
    summary = three_days_on.sweep_if_due()
    assert summary is not None and summary["days"] == 4  # today (again), the two empty days since, and that day
    assert blobs.head(object_key("acme", today())) is not None

    past_retention = start + 32 * DAY_S + 60
    later = AuditExport(store, blobs, orgs, retention_days=30, now=lambda: past_retention)
    summary = later.sweep_if_due()
    assert summary is not None and summary["expired"] >= 1
    assert blobs.head(object_key("acme", today())) is None
    assert store.exported_on(today().isoformat()) == []
    claim = env.container.table.get("auditexport#claim", "last")
    assert claim is not None and claim["exported"] == (today() + timedelta(days=31)).isoformat()


def test_the_health_endpoint_counts_the_audit_writes_that_failed(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """`GET /api/v2/ping` (what the embedded server's monitoring polls) says how many events were not written."""
    recorder = env.container.audit_recorder
    assert env.client.get("/api/v2/ping").headers["X-Terrace-Audit-Write-Failures"] == str(recorder.failures)

    def refuse(event: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(env.container.audit_store, "append", refuse)
    before = recorder.failures
    lock = env.client.post("/api/v2/organizations/acme/workspaces", headers=env.headers, json={})
    assert lock.status_code < 500
    assert recorder.failures == before + 1
    answer = env.client.get("/api/v2/ping")
    assert answer.status_code == 204 and answer.headers["X-Terrace-Audit-Write-Failures"] == str(before + 1)


def test_with_a_log_sink_each_event_is_sent_once_to_its_organizations_stream() -> None:
    """TERRACE_AUDIT_LOG_GROUP on AWS: each export sends what was recorded since the last send (events of the last
    five minutes wait for the next one); a sink that refuses leaves the cursor, so the next export sends again."""
    from terrace.adapters.memory_log_sink import MemoryLogSink

    env = day_of_actions(build_memory(Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s")))
    store, blobs, orgs = env.container.audit_store, env.container.blobs, env.container.organizations
    sink = MemoryLogSink()
    moment = [clock.epoch()]
    export = AuditExport(store, blobs, orgs, retention_days=30, now=lambda: moment[0], log_sink=sink)
    summary = export.sweep_if_due()
    assert summary is not None and summary["logged"] == 0 and sink.streams.get("acme", []) == []  # too recent

    moment[0] += 3600
    summary = export.sweep_if_due()
    assert summary is not None and summary["logged"] >= 5
    sent = [json.loads(message) for _, message in sink.streams["acme"]]
    assert sent == env.api_day("/api/v2/organizations/acme/audit-trail", today())
    assert [at for at, _ in sink.streams["acme"]] == sorted(at for at, _ in sink.streams["acme"])

    class Refusing(MemoryLogSink):
        def send(self, stream: str, lines: object) -> None:
            raise OSError("throttled")

    moment[0] += 3600
    at = datetime.fromtimestamp(moment[0] - 600, UTC)  # recorded ten minutes before the next export
    store.append(AuditEvent(id="ae-later", timestamp=clock.iso(at), epoch_us=int(at.timestamp() * 1_000_000),
                            organization="acme", actor=Actor("user", "user-1", "alice"), source="127.0.0.1",
                            action="workspace.create", resource_type="workspace", resource_id="ws-later",
                            outcome=201))  # fmt: skip
    refused = AuditExport(store, blobs, orgs, retention_days=30, now=lambda: moment[0], log_sink=Refusing())
    assert refused.sweep_if_due() is not None
    moment[0] += 3600
    assert export.sweep_if_due() is not None
    actions = [json.loads(message)["resource"]["action"] for _, message in sink.streams["acme"]]
    assert actions.count("workspace.create") == 2  # prod's once, the later one once: after the refusal, sent again


def test_an_organizations_deletion_takes_the_objects_of_its_export() -> None:
    env = day_of_actions(build_memory(Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s")))
    assert env.container.audit_export.export_day(today())[0] >= 1
    key = object_key("acme", today())
    assert env.container.blobs.head(key) is not None
    assert env.client.delete("/api/v2/organizations/acme", headers=env.headers).status_code == 204
    assert env.container.blobs.head(key) is None
    assert "acme" not in env.container.audit_store.exported_on(today().isoformat())
