"""Data retention policies: the organization and workspace API in both of TFE's shapes (go-tfe 1.41's
`data-retention-policies`, TFE v202401+'s delete-older / dont-delete types), their permissions, and the sweep
that deletes old backing data, run by the reaper with an injected clock (nothing sleeps)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from run_helpers import RunEnv, make_run_env
from state_helpers import Env, other_user, state_bytes, sv_body
from terrace.domain.principal import PrincipalKind
from terrace.services.runs.logs import archive_key
from terrace.services.workflows.retention_sweep import RetentionSweep
from terrace.services.workflows.store import SweepClaimStore

DAY = 86400.0
LEGACY, OLDER, KEEP = (
    "data-retention-policies",
    "data-retention-policy-delete-olders",
    "data-retention-policy-dont-deletes",
)


def _policy(type_: str, days: int | None = None) -> dict[str, Any]:
    return {"data": {"type": type_, "attributes": {} if days is None else {"delete-older-than-n-days": days}}}


def test_organization_policy_in_both_shapes(state_env: Env) -> None:
    env, path = state_env, f"/api/v2/organizations/{state_env.org}/relationships/data-retention-policy"
    org = lambda: env.client.get(f"/api/v2/organizations/{env.org}", headers=env.auth).json()["data"]  # noqa: E731
    assert env.client.get(path, headers=env.auth).status_code == 404
    assert "data-retention-policy" not in org()["relationships"]

    legacy = env.client.patch(path, headers=env.auth, json=_policy(LEGACY, 33))
    assert legacy.status_code == 200, legacy.text
    created = legacy.json()["data"]
    assert created["type"] == LEGACY and created["id"].startswith("drp-")
    assert created["attributes"]["delete-older-than-n-days"] == 33
    assert org()["relationships"]["data-retention-policy"]["data"] == {"type": LEGACY, "id": created["id"]}
    updated = env.client.patch(path, headers=env.auth, json=_policy(LEGACY, 45)).json()["data"]
    assert updated["id"] == created["id"] and env.client.get(path, headers=env.auth).json()["data"] == updated

    newer = env.client.post(path, headers=env.auth, json=_policy(OLDER, 20)).json()["data"]
    assert newer["type"] == OLDER and newer["attributes"]["delete-older-than-n-days"] == 20
    keep = env.client.post(path, headers=env.auth, json=_policy(KEEP)).json()["data"]
    assert keep["type"] == KEEP and keep["id"] != newer["id"] and keep["attributes"] == {}
    assert org()["relationships"]["data-retention-policy"]["data"] == {"type": KEEP, "id": keep["id"]}

    assert env.client.delete(path, headers=env.auth).status_code == 204
    assert env.client.get(path, headers=env.auth).status_code == 404
    assert "data-retention-policy" not in org()["relationships"]
    assert env.client.delete(path, headers=env.auth).status_code == 204  # nothing left to delete is fine


def test_workspace_policy_and_bad_input(state_env: Env) -> None:
    env, path = state_env, f"/api/v2/workspaces/{state_env.ws_id}/relationships/data-retention-policy"
    assert env.client.get(path, headers=env.auth).status_code == 404
    set_ = env.client.patch(path, headers=env.auth, json=_policy(LEGACY, 33))
    assert set_.status_code == 200, set_.text
    ws = env.client.get(f"/api/v2/workspaces/{env.ws_id}", headers=env.auth).json()["data"]
    assert ws["relationships"]["data-retention-policy"]["data"]["id"] == set_.json()["data"]["id"]
    before = env.stored()
    for body, pointer in (
        (_policy(LEGACY, 0), "/data/attributes/delete-older-than-n-days"),
        (_policy(OLDER, None), "/data/attributes/delete-older-than-n-days"),
        (_policy(OLDER, True), "/data/attributes/delete-older-than-n-days"),  # type: ignore[arg-type]
        ({"data": {"type": "workspaces", "attributes": {}}}, "/data/type"),
        ({"data": "nope"}, "/data"),
    ):
        refused = env.client.post(path, headers=env.auth, json=body)
        assert refused.status_code == 422, (body, refused.text)
        assert refused.json()["errors"][0]["source"]["pointer"] == pointer
    assert env.stored() == before  # a refusal writes nothing
    assert env.client.delete(path, headers=env.auth).status_code == 204
    assert env.client.get(path, headers=env.auth).status_code == 404


def test_other_organizations_see_nothing_and_readers_cannot_change(state_env: Env) -> None:
    env = state_env
    other_token, _ = other_user(env)
    stranger = {"Authorization": f"Bearer {other_token}"}
    for path in (
        f"/api/v2/organizations/{env.org}/relationships/data-retention-policy",
        f"/api/v2/workspaces/{env.ws_id}/relationships/data-retention-policy",
    ):
        assert env.client.patch(path, headers=env.auth, json=_policy(LEGACY, 5)).status_code == 200
        assert env.client.get(path, headers=stranger).status_code == 404
        assert env.client.post(path, headers=stranger, json=_policy(KEEP)).status_code == 404
        assert env.client.delete(path, headers=stranger).status_code == 404
        assert env.client.get(path, headers=env.auth).json()["data"]["type"] == LEGACY
    # a member of the organization who is not an owner reads the organization's policy but cannot change it
    member = env.container.accounts.create_user("bob", "bob@example.com")
    env.container.memberships.invite_user(env.principal, env.org, "bob")
    token = env.container.accounts.issue_token(PrincipalKind.USER, member.id).secret
    bob = {"Authorization": f"Bearer {token}"}
    [invitation] = env.client.get("/api/v2/organization-memberships", headers=bob).json()["data"]
    accepted = env.client.post(f"/api/v2/organization-memberships/{invitation['id']}/actions/accept", headers=bob)
    assert accepted.status_code == 200, accepted.text
    path = f"/api/v2/organizations/{env.org}/relationships/data-retention-policy"
    assert env.client.get(path, headers={"Authorization": f"Bearer {token}"}).status_code == 200
    refused = env.client.post(path, headers={"Authorization": f"Bearer {token}"}, json=_policy(KEEP))
    assert refused.status_code in (403, 404), refused.text


# the sweep ---------------------------------------------------------------------------------------------


def _sweep(env: RunEnv, days_from_now: float) -> dict[str, int]:
    """One sweep with the clock moved `days_from_now` ahead (the data was written at the real now)."""
    later = time.time() + days_from_now * DAY
    return _sweeper(env, lambda: later).sweep_once()


def _sweeper(env: RunEnv, now: Callable[[], float]) -> RetentionSweep:
    """The container's sweep as wired, on the given clock."""
    c = env.container
    return RetentionSweep(
        SweepClaimStore(c.table),
        c.blobs,
        c.organizations,
        c.workspaces,
        c.retention_policies,
        c.configuration_versions,
        c.run_store,
        c.state_store,
        now=now,
    )


def _push_states(env: RunEnv, count: int) -> list[str]:
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {"reason": "push"}).status_code == 200
    ids = []
    for serial in range(1, count + 1):
        pushed = env.api("POST", f"/workspaces/{env.workspace_id}/state-versions", sv_body(state_bytes(serial), serial))
        assert pushed.status_code == 201, pushed.text
        ids.append(pushed.json()["data"]["id"])
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/unlock").status_code == 200
    return ids


def test_sweep_deletes_old_backing_data_but_never_the_current_state_or_a_locked_workspace() -> None:
    env = make_run_env()
    old_sv, older_sv, current_sv = _push_states(env, 3)
    speculative_cv = env.upload_config(speculative=True)
    run_id = env.create_run(speculative_cv)["id"]
    env.work_next(has_changes=False, log=b"planning\n" * 100)
    run = env.container.run_store.load(run_id)
    assert run.final and run.plan.json_key
    env.blobs.put(run.plan.json_key, b'{"planned_values": {}}')
    old_cv, latest_cv = env.upload_config(), env.upload_config()
    plan_log = archive_key(run.plan.id)
    assert env.blobs.head(plan_log) is not None

    def status(sv: str) -> str:
        return str(env.api("GET", f"/state-versions/{sv}").json()["data"]["attributes"]["status"])

    cv_status = lambda cv: env.container.configuration_versions.load(cv).backing_data  # noqa: E731
    set_org = env.api("POST", "/organizations/acme/relationships/data-retention-policy", _policy(OLDER, 30))
    assert set_org.status_code == 200, set_org.text

    assert sum(_sweep(env, 29).values()) == 1  # one workspace looked at, nothing is 30 days old yet
    assert {status(sv) for sv in (old_sv, older_sv, current_sv)} == {"finalized"}

    ws_path = f"/workspaces/{env.workspace_id}/relationships/data-retention-policy"
    assert env.api("POST", ws_path, _policy(KEEP)).status_code == 200  # the workspace's own policy wins
    assert _sweep(env, 31)["workspaces"] == 0
    assert env.api("DELETE", ws_path).status_code == 204

    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {"reason": "busy"}).status_code == 200
    assert _sweep(env, 31)["skipped_locked"] == 1  # a locked workspace is left alone
    assert status(old_sv) == "finalized"
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/unlock").status_code == 200

    summary = _sweep(env, 31)
    assert summary["state_versions"] == 2 and summary["configuration_versions"] == 2 and summary["runs"] == 1
    assert status(old_sv) == status(older_sv) == "backing_data_permanently_deleted"
    assert status(current_sv) == "finalized"
    download = env.api("GET", f"/state-versions/{current_sv}/download", follow_redirects=False)
    assert download.status_code == 302
    assert env.api("GET", f"/state-versions/{old_sv}/download", follow_redirects=False).status_code == 404
    assert not any(old_sv in key for key in env.blobs.objects)
    assert cv_status(old_cv) == cv_status(speculative_cv) == "deleted" and cv_status(latest_cv) == "present"
    assert env.blobs.head(f"config/{env.workspace_id}/{latest_cv}.tar.gz") is not None
    assert env.blobs.head(run.plan.json_key) is None
    assert b"deleted by the data retention policy" in env.blobs.get(plan_log)
    log_url = env.api("GET", f"/plans/{run.plan.id}").json()["data"]["attributes"]["log-read-url"]
    assert b"data retention policy" in env.client.get(log_url).content  # the log reader answers the note
    assert sum(_sweep(env, 31)[k] for k in ("state_versions", "configuration_versions", "runs")) == 0  # idempotent


def test_the_reaper_sweeps_at_most_once_an_interval() -> None:
    env = make_run_env()
    c = env.container
    clock = [time.time()]
    sweep = _sweeper(env, lambda: clock[0])
    assert sweep.sweep_if_due(3600) is not None
    assert sweep.sweep_if_due(3600) is None  # claimed a moment ago (by any process: the claim is in the table)
    clock[0] += 3601
    assert sweep.sweep_if_due(3600) is not None
    assert c.table.get("retention#sweep", "last") is not None
    c.table.delete("retention#sweep", "last")
    c.reaper.reap_once()  # the reaper runs the sweep: it claimed one
    assert c.table.get("retention#sweep", "last") is not None
