"""Run triggers through the API (go-tfe's `run_trigger.go` shapes, TFC's limits and errors) and the use case that
queues the triggered runs when a source run applies (the `run.status_changed` subscriber): a chain A→B→C, a loop
attempt that stops, at-least-once delivery that queues one run, and a workspace's deletion taking its triggers."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fastapi.testclient import TestClient
from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_events import MemoryEventPublisher
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app
from ui_helpers import sign_in, sign_in_token

TYPE_REQUIRED = "Filter parameter run-trigger type is required and must be either 'inbound' or 'outbound'"


def _workspace(env: RunEnv, name: str, organization: str = "acme", **attributes: Any) -> str:
    body = {"data": {"type": "workspaces", "attributes": {"name": name, "execution-mode": "remote", **attributes}}}
    response = env.api("POST", f"/organizations/{organization}/workspaces", body)
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


def _trigger(env: RunEnv, target: str, source: str | None) -> Any:
    rel = {"sourceable": {"data": {"type": "workspaces", "id": source}}} if source else {}
    return env.api(
        "POST", f"/workspaces/{target}/run-triggers", {"data": {"type": "run-triggers", "relationships": rel}}
    )


def _listed(env: RunEnv, ws: str, kind: str, query: str = "") -> Any:
    return env.api("GET", f"/workspaces/{ws}/run-triggers?filter%5Brun-trigger%5D%5Btype%5D={kind}{query}")


def test_create_read_list_and_delete_in_go_tfe_shape() -> None:
    env = make_run_env()
    target, one, two = env.workspace_id, _workspace(env, "one"), _workspace(env, "two")
    made = [_trigger(env, target, source) for source in (one, two)]
    assert [m.status_code for m in made] == [201, 201], made[0].text
    first = made[0].json()["data"]
    assert first["type"] == "run-triggers" and first["id"].startswith("rt-")
    assert first["attributes"]["sourceable-name"] == "one" and first["attributes"]["workspace-name"] == "app"
    assert first["relationships"]["sourceable"]["data"] == {"type": "workspaces", "id": one}
    assert first["relationships"]["workspace"]["data"] == {"type": "workspaces", "id": target}

    inbound = _listed(env, target, "inbound").json()
    assert sorted(t["id"] for t in inbound["data"]) == sorted(m.json()["data"]["id"] for m in made)
    assert first in inbound["data"]  # what go-tfe compares: the created trigger is the listed one
    assert inbound["meta"]["pagination"]["total-count"] == 2
    page = _listed(env, target, "inbound", "&page%5Bnumber%5D=999&page%5Bsize%5D=100").json()
    assert page["data"] == [] and page["meta"]["pagination"]["current-page"] == 999
    outbound = _listed(env, one, "outbound").json()["data"]
    assert [t["id"] for t in outbound] == [first["id"]]
    assert _listed(env, target, "outbound").json()["data"] == []

    included = _listed(env, target, "inbound", "&include=sourceable,workspace").json()["included"]
    assert sorted(i["id"] for i in included) == sorted([one, two, target])
    read = env.api("GET", f"/run-triggers/{first['id']}?include=sourceable").json()
    assert read["data"] == first and [i["id"] for i in read["included"]] == [one]

    assert env.api("DELETE", f"/run-triggers/{first['id']}").status_code == 204
    assert env.api("GET", f"/run-triggers/{first['id']}").status_code == 404
    assert env.api("DELETE", f"/run-triggers/{first['id']}").status_code == 404
    assert _trigger(env, target, one).status_code == 201  # a removed source can be added again


def test_bad_requests_are_tfc_errors_and_write_nothing() -> None:
    env = make_run_env()
    target, source = env.workspace_id, _workspace(env, "source")
    for query in ("", "?filter%5Brun-trigger%5D%5Btype%5D=oubound"):
        response = env.api("GET", f"/workspaces/{target}/run-triggers{query}")
        assert response.status_code == 400
        assert response.json()["errors"][0] == {"status": "400", "title": "bad request", "detail": TYPE_REQUIRED}
    missing = _trigger(env, target, None)
    assert missing.status_code == 422 and missing.json()["errors"][0]["source"]["pointer"] == (
        "/data/relationships/sourceable"
    )
    assert _trigger(env, target, target).status_code == 422  # a workspace cannot trigger itself
    assert _trigger(env, target, "ws-doesnotexist1234").status_code == 404
    assert _trigger(env, "ws-doesnotexist1234", source).status_code == 404
    assert env.api("GET", "/run-triggers/nonexisting").status_code == 404
    untyped = {"data": {"relationships": {"sourceable": {"data": {"type": "workspaces", "id": source}}}}}
    assert env.api("POST", f"/workspaces/{target}/run-triggers", untyped).status_code == 201  # TFC's docs' body
    wrong = {"data": {"type": "workspaces", "relationships": untyped["data"]["relationships"]}}
    refused = env.api("POST", f"/workspaces/{target}/run-triggers", wrong)
    assert refused.status_code == 422 and refused.json()["errors"][0]["source"]["pointer"] == "/data/type"
    duplicate = _trigger(env, target, source)
    assert duplicate.status_code == 422 and "already a source" in duplicate.json()["errors"][0]["detail"]
    assert _listed(env, target, "inbound").json()["meta"]["pagination"]["total-count"] == 1

    other_org = {"data": {"type": "organizations", "attributes": {"name": "other", "email": "o@example.com"}}}
    assert env.api("POST", "/organizations", other_org).status_code == 201
    foreign = _workspace(env, "foreign", organization="other")
    assert _trigger(env, target, foreign).status_code == 422  # the caller reads it, but it is not the same org
    assert _trigger(env, foreign, target).status_code == 422


def test_twenty_sources_at_most() -> None:
    env = make_run_env()
    sources = [_workspace(env, f"s{i}") for i in range(21)]
    for source in sources[:20]:
        assert _trigger(env, env.workspace_id, source).status_code == 201
    refused = _trigger(env, env.workspace_id, sources[20])
    assert refused.status_code == 422 and "20 source workspaces" in refused.json()["errors"][0]["detail"]
    first = _listed(env, env.workspace_id, "inbound").json()["data"][0]["id"]  # any one of them
    assert env.api("DELETE", f"/run-triggers/{first}").status_code == 204
    assert _trigger(env, env.workspace_id, sources[20]).status_code == 201


def test_strangers_see_nothing_and_readers_cannot_manage() -> None:
    env = make_run_env()
    source = _workspace(env, "source")
    made = _trigger(env, env.workspace_id, source).json()["data"]["id"]
    bob = env.container.accounts.create_user("bob", "bob@example.com")
    bob_token = env.container.accounts.issue_token(PrincipalKind.USER, bob.id).secret
    headers = {"Authorization": f"Bearer {bob_token}", "Content-Type": "application/vnd.api+json"}
    for method, path in (
        ("GET", f"/api/v2/run-triggers/{made}"),
        ("DELETE", f"/api/v2/run-triggers/{made}"),
        ("GET", f"/api/v2/workspaces/{env.workspace_id}/run-triggers?filter%5Brun-trigger%5D%5Btype%5D=inbound"),
    ):
        response = env.client.request(method, path, headers=headers)
        assert response.status_code == 404, (method, path, response.text)
    body = {"data": {"type": "run-triggers", "relationships": {"sourceable": {"data": {"type": "workspaces",
            "id": source}}}}}  # fmt: skip
    hidden = env.client.post(f"/api/v2/workspaces/{env.workspace_id}/run-triggers", headers=headers, json=body)
    assert hidden.status_code == 404
    # same words for a hidden workspace and an absent one
    absent = env.client.post("/api/v2/workspaces/ws-doesnotexist1234/run-triggers", headers=headers, json=body)
    assert hidden.json()["errors"][0]["detail"].replace(env.workspace_id, "X") == absent.json()["errors"][0][
        "detail"
    ].replace("ws-doesnotexist1234", "X")


def test_auto_apply_run_trigger_is_a_workspace_attribute() -> None:
    env = make_run_env()
    path = f"/workspaces/{env.workspace_id}"
    stored = env.container.table.get(env.workspace_id, "ws")
    assert stored is not None
    before = {k: v for k, v in stored.items() if k != "auto_apply_run_trigger"}  # as stored before it was a field
    env.container.table.put({**before, "extra": {"auto-apply-run-trigger": True}})
    assert env.api("GET", path).json()["data"]["attributes"]["auto-apply-run-trigger"] is True
    env.container.table.put(stored)
    assert env.api("GET", path).json()["data"]["attributes"]["auto-apply-run-trigger"] is False
    on = {"data": {"type": "workspaces", "attributes": {"auto-apply-run-trigger": True}}}
    assert env.api("PATCH", path, on).json()["data"]["attributes"]["auto-apply-run-trigger"] is True
    bad = {"data": {"type": "workspaces", "attributes": {"auto-apply-run-trigger": "yes"}}}
    refused = env.api("PATCH", path, bad)
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["source"]["pointer"] == "/data/attributes/auto-apply-run-trigger"


# the fan-out ------------------------------------------------------------------------------------------------


def _deliver(env: RunEnv, seen: list[int]) -> None:
    """The events worker: hand every event published since the last delivery to the subscribers."""
    publisher = env.container.publisher
    assert isinstance(publisher, MemoryEventPublisher)
    while seen[0] < len(publisher.events):
        event = publisher.events[seen[0]]
        seen[0] += 1
        env.container.events.handle(event)


def _apply(env: RunEnv, ws: str, seen: list[int]) -> str:
    """Queue a run in `ws` from a new configuration, plan, confirm and apply it; deliver the events."""
    run = env.create_run(env.upload_config(workspace_id=ws), ws)
    return _finish(env, run["id"], seen)


def _finish(env: RunEnv, run_id: str, seen: list[int]) -> str:
    env.work_next()  # the plan
    if env.run(run_id)["attributes"]["status"] != "apply_queued":
        assert env.api("POST", f"/runs/{run_id}/actions/apply", {}).status_code == 202
    env.work_next()  # the apply
    assert env.run(run_id)["attributes"]["status"] == "applied"
    _deliver(env, seen)
    return run_id


def _runs(env: RunEnv, ws: str) -> list[dict[str, Any]]:
    return list(env.api("GET", f"/workspaces/{ws}/runs").json()["data"])


def test_an_apply_queues_runs_along_the_chain_and_a_loop_stops(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="terrace.run_triggers")
    env = make_run_env()
    a = env.workspace_id
    b = _workspace(env, "b", **{"auto-apply-run-trigger": True})
    c = _workspace(env, "c")
    for target, source in ((b, a), (c, b), (a, c)):  # A→B→C, and C→A would close a loop
        assert _trigger(env, target, source).status_code == 201
    seen = [0]
    for ws in (b, c):
        env.upload_config(workspace_id=ws)  # each has a configuration version (no run queued)

    source_run = _apply(env, a, seen)
    [b_run] = _runs(env, b)
    assert b_run["attributes"]["source"] == "tfe-run-trigger"
    assert b_run["attributes"]["auto-apply"] is True  # b sets auto-apply-run-trigger
    events = env.api("GET", f"/runs/{b_run['id']}/run-events").json()["data"]
    [queued] = [e for e in events if e["attributes"]["action"] == "queued_by_run_trigger"]
    assert source_run in queued["attributes"]["description"]
    _finish(env, b_run["id"], seen)  # auto-applied: no confirmation

    [c_run] = _runs(env, c)
    assert c_run["attributes"]["auto-apply"] is False
    assert c_run["attributes"]["message"].startswith(f"Triggered by run {b_run['id']} of workspace b")
    _finish(env, c_run["id"], seen)  # confirmed by hand: C→A comes back to A, in the chain: nothing queued
    assert [r["id"] for r in _runs(env, a)] == [source_run]
    assert f"would queue a run in workspace {a}, already in its chain {a} -> {b} -> {c}; stopped" in caplog.text
    assert env.container.run_store.load(c_run["id"]).trigger["chain"] == [a, b]  # type: ignore[index]


def test_the_same_applied_event_twice_queues_one_run_and_a_workspace_without_configuration_none(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="terrace.run_triggers")
    env = make_run_env()
    target, empty = _workspace(env, "target"), _workspace(env, "empty")
    for ws in (target, empty):
        assert _trigger(env, ws, env.workspace_id).status_code == 201
    env.upload_config(workspace_id=target)
    seen = [0]
    source_run = _apply(env, env.workspace_id, seen)
    publisher = env.container.publisher
    assert isinstance(publisher, MemoryEventPublisher)
    [applied] = [e for e in publisher.events if e.get("run_id") == source_run and e.get("to") == "applied"]
    assert env.container.run_trigger_fanout.handle(applied) == []  # delivered again: refused by the run's write
    assert f"run {source_run} already queued its run in {target}" in caplog.text
    assert len(_runs(env, target)) == 1
    assert _runs(env, empty) == []
    assert f"workspace {empty} has no configuration version; no run queued for run {source_run}" in caplog.text


def test_deleting_a_workspace_removes_its_triggers_both_ways() -> None:
    env = make_run_env()
    up, down = _workspace(env, "up"), _workspace(env, "down")
    into = _trigger(env, env.workspace_id, up).json()["data"]["id"]
    out = _trigger(env, down, env.workspace_id).json()["data"]["id"]
    assert env.api("DELETE", f"/workspaces/{env.workspace_id}").status_code == 204
    for trigger in (into, out):
        assert env.container.table.get(trigger, "rt") is None
    assert _listed(env, up, "outbound").json()["data"] == []
    assert _listed(env, down, "inbound").json()["data"] == []
    assert env.container.run_triggers.outbound(up) == [] and env.container.run_triggers.inbound(down) == []


def test_the_settings_section_refuses_bad_sources_and_forged_forms() -> None:
    env = make_run_env()
    source = _workspace(env, "source")
    browser = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(browser, env.headers["Authorization"].split()[1]).status_code == 303
    page = browser.get("/app/acme/workspaces/app/settings/run-triggers")
    assert page.status_code == 200 and '<option value="' + source + '">source</option>' in page.text
    fragment = browser.get("/app/acme/workspaces/app/settings/run-triggers", headers={"HX-Request": "true"})
    assert "<html" not in fragment.text and "Add source" in fragment.text
    csrf = sign_in_token(page.text)
    path = "/app/acme/workspaces/app/settings/run-triggers"
    assert browser.post(path, data={"csrf_token": "forged", "sourceable_id": source}).status_code == 403
    refused = browser.post(path, data={"csrf_token": csrf, "sourceable_id": env.workspace_id})
    assert refused.status_code == 422 and "cannot be its own source" in refused.text
    assert browser.post(path, data={"csrf_token": csrf, "sourceable_id": source}).status_code == 303
    [view] = env.container.run_triggers.inbound(env.workspace_id)
    forged = browser.post(f"{path}/{view.id}/delete", data={"csrf_token": "forged"})
    assert forged.status_code == 403 and env.container.run_triggers.inbound(env.workspace_id) == [view]
    assert browser.post(f"{path}/{view.id}/delete", data={"csrf_token": csrf}).status_code == 303
    assert env.container.run_triggers.inbound(env.workspace_id) == []
