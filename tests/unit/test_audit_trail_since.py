"""The audit trail's `since`, in process: "created after this date" as HCP's API reads it, at the precision sent.
go-tfe sends whole seconds (TestAuditTrailsList's `using since query param` reads its clock, then sends that second),
so an event recorded earlier in the same second is not after it; a time with a fraction names its millisecond."""

from __future__ import annotations

from datetime import datetime, timedelta

from run_helpers import RunEnv, make_run_env


def _actions(env: RunEnv, since: str) -> list[str]:
    response = env.client.get("/api/v2/organizations/acme/audit-trail", headers=env.headers, params={"since": since})
    assert response.status_code == 200, response.text
    return [event["resource"]["action"] for event in response.json()["data"]]


def test_since_is_exclusive_at_the_precision_sent() -> None:
    env = make_run_env()
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {"reason": "x"}).status_code == 200
    events = env.client.get("/api/v2/organizations/acme/audit-trail", headers=env.headers).json()["data"]
    [lock] = [event for event in events if event["resource"]["action"] == "workspace.lock"]
    at = datetime.fromisoformat(lock["timestamp"].replace("Z", "+00:00"))
    whole_second = at.replace(microsecond=0)
    millisecond = at.replace(microsecond=at.microsecond // 1000 * 1000)

    assert "workspace.lock" not in _actions(env, whole_second.strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert "workspace.lock" in _actions(env, (whole_second - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert "workspace.lock" not in _actions(env, millisecond.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z")
    earlier = millisecond - timedelta(milliseconds=1)
    assert "workspace.lock" in _actions(env, earlier.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z")
