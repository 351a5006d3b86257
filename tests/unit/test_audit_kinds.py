"""Every kind of action issue 46 lists is recorded exactly once, in the right trail, with time, actor (kind, id,
name, token id), source address, organization, resource, action and outcome: tokens, memberships, teams, access,
workspaces, variables (names, never values), state through the http backend, runs, policies and policy sets,
agents, registry publishing, organization settings, the site admin API, and refused attempts. Each request
carries its own X-Request-Id, so its events are counted by it."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from run_helpers import RunEnv, make_run_env
from state_helpers import state_bytes
from terrace.domain.audit import SITE, AuditEvent
from terrace.domain.principal import PrincipalKind

SECRET = "p4ss-never-in-the-trail"
_ids = itertools.count()


class Day:
    def __init__(self, env: RunEnv) -> None:
        self.env = env
        self.expected: dict[str, tuple[str, str, int]] = {}  # request id -> (trail, action, outcome)

    def call(self, trail: str, action: str, outcome: int, method: str, path: str, body: Any = None,
             token: str | None = None, **kwargs: Any) -> Any:  # fmt: skip
        rid = f"day-{next(_ids)}"
        headers = dict(self.env.headers) if token is None else {"Authorization": f"Bearer {token}"}
        headers["X-Request-Id"] = rid
        response = self.env.client.request(method, path, json=body, headers=headers, **kwargs)
        assert response.status_code == outcome, f"{method} {path}: {response.status_code} {response.text[:300]}"
        self.expected[rid] = (trail, action, outcome)
        return response.json() if response.content and "json" in response.headers.get("content-type", "") else {}


def _data(kind: str, /, **attributes: Any) -> dict[str, Any]:
    return {"data": {"type": kind, "attributes": attributes}}


def _a_day(day: Day) -> None:  # noqa: PLR0915 - one line per action kind
    env, c, org = day.env, day.env.container, "acme"
    api = "/api/v2"
    alice = c.accounts.find_user("alice")
    assert alice is not None
    token = day.call(SITE, "authentication-token.create", 201, "POST", f"{api}/users/{alice.id}/authentication-tokens",
                     _data("authentication-tokens", description="ci"))["data"]["id"]  # fmt: skip
    day.call(SITE, "authentication-token.delete", 204, "DELETE", f"{api}/authentication-tokens/{token}")
    members = f"{api}/organizations/{org}/organization-memberships"
    invited = day.call(org, "organization-membership.create", 201, "POST", members,
                       _data("organization-memberships", email="bob@example.com"))["data"]["id"]  # fmt: skip
    team = day.call(org, "team.create", 201, "POST", f"{api}/organizations/{org}/teams", _data("teams", name="devs"))
    team_id = team["data"]["id"]
    day.call(org, "team.update", 200, "PATCH", f"{api}/teams/{team_id}", _data("teams", name="developers"))
    users = {"data": [{"type": "users", "id": "alice"}]}
    day.call(org, "team-membership.create", 204, "POST", f"{api}/teams/{team_id}/relationships/users", users)
    day.call(org, "team-membership.delete", 204, "DELETE", f"{api}/teams/{team_id}/relationships/users", users)
    ws = day.call(org, "workspace.create", 201, "POST", f"{api}/organizations/{org}/workspaces",
                  _data("workspaces", name="audited"))["data"]["id"]  # fmt: skip
    grant = {
        "data": {
            "type": "team-workspaces",
            "attributes": {"access": "read"},
            "relationships": {
                "team": {"data": {"type": "teams", "id": team_id}},
                "workspace": {"data": {"type": "workspaces", "id": ws}},
            },
        }
    }
    grant_id = day.call(org, "team-workspace.create", 201, "POST", f"{api}/team-workspaces", grant)["data"]["id"]
    day.call(org, "team-workspace.update", 200, "PATCH", f"{api}/team-workspaces/{grant_id}",
             _data("team-workspaces", access="write"))  # fmt: skip
    day.call(org, "team-workspace.delete", 204, "DELETE", f"{api}/team-workspaces/{grant_id}")
    day.call(org, "workspace.update", 200, "PATCH", f"{api}/workspaces/{ws}", _data("workspaces", description="d"))
    var = day.call(org, "variable.create", 201, "POST", f"{api}/workspaces/{ws}/vars",
                   _data("vars", key="db_password", value=SECRET, category="terraform"))["data"]["id"]  # fmt: skip
    day.call(org, "variable.update", 200, "PATCH", f"{api}/workspaces/{ws}/vars/{var}",
             _data("vars", value=SECRET + "2"))  # fmt: skip
    day.call(org, "variable.delete", 204, "DELETE", f"{api}/workspaces/{ws}/vars/{var}")
    day.call(org, "workspace.lock", 200, "POST", f"{api}/workspaces/{ws}/actions/lock", {})
    day.call(org, "workspace.lock", 409, "POST", f"{api}/workspaces/{ws}/actions/lock", {})  # refused
    day.call(org, "workspace.unlock", 200, "POST", f"{api}/workspaces/{ws}/actions/unlock", {})
    day.call(org, "state.write", 200, "POST", f"/state/v1/{org}/audited", content=state_bytes(1))
    day.call(org, "state.read", 200, "GET", f"/state/v1/{org}/audited")
    day.call(org, "state-version-output.read", 200, "GET", f"{api}/workspaces/{ws}/current-state-version-outputs")
    run = env.create_run(env.upload_config())  # on `app` (its own events are the day of test_audit_trail.py)
    env.work_next()
    day.call(org, "run.discard", 202, "POST", f"{api}/runs/{run['id']}/actions/discard", {"comment": "no"})
    queued = env.create_run(env.upload_config())
    day.call(org, "run.cancel", 202, "POST", f"{api}/runs/{queued['id']}/actions/cancel", {})
    day.call(SITE, "task-stage.override", 404, "POST", f"{api}/task-stages/ts-nope/actions/override", {})
    rule = _data("policies", name="p", kind="opa", query="data.terraform.deny", **{"enforcement-level": "advisory"})
    policy = day.call(org, "policy.create", 201, "POST", f"{api}/organizations/{org}/policies", rule)
    day.call(
        org, "policy.update", 200, "PATCH", f"{api}/policies/{policy['data']['id']}", _data("policies", description="d")
    )
    day.call(org, "policy.delete", 204, "DELETE", f"{api}/policies/{policy['data']['id']}")
    ps = day.call(org, "policy-set.create", 201, "POST", f"{api}/organizations/{org}/policy-sets",
                  _data("policy-sets", name="ps", kind="opa"))["data"]["id"]  # fmt: skip
    day.call(org, "policy-set.update", 200, "PATCH", f"{api}/policy-sets/{ps}", _data("policy-sets", description="d"))
    day.call(org, "policy-set.delete", 204, "DELETE", f"{api}/policy-sets/{ps}")
    pool = day.call(org, "agent-pool.create", 201, "POST", f"{api}/organizations/{org}/agent-pools",
                    _data("agent-pools", name="vpc"))["data"]["id"]  # fmt: skip
    tokens = f"{api}/agent-pools/{pool}/authentication-tokens"
    secret = day.call(org, "authentication-token.create", 201, "POST", tokens,
                      _data("authentication-tokens", description="a"))["data"]["attributes"]["token"]  # fmt: skip
    day.call(org, "agent.register", 200, "POST", "/api/agent/register", {}, token=secret)
    day.call(org, "registry-module.create", 201, "POST", f"{api}/organizations/{org}/registry-modules",
             _data("registry-modules", name="vpc", provider="aws"))  # fmt: skip
    day.call(org, "registry-module-version.create", 201, "POST",
             f"{api}/organizations/{org}/registry-modules/private/{org}/vpc/aws/versions",
             _data("registry-module-versions", version="1.0.0"))  # fmt: skip
    day.call(
        org, "organization.update", 200, "PATCH", f"{api}/organizations/{org}", _data("organizations", email="o@x.io")
    )
    day.call(org, "organization-membership.delete", 204, "DELETE", f"{api}/organization-memberships/{invited}")
    day.call(org, "workspace.delete", 204, "DELETE", f"{api}/workspaces/{ws}")
    stranger = c.accounts.create_user("mallory", "m@example.com")
    refused = c.accounts.issue_token(PrincipalKind.USER, stranger.id).secret
    changed = _data("organizations", email="x@x.io")
    day.call(org, "organization.update", 404, "PATCH", f"{api}/organizations/{org}", changed, token=refused)
    c.users.set_flags(alice.id, site_admin=True)
    day.call(SITE, "general-setting.update", 200, "PATCH", f"{api}/admin/general-settings",
             _data("general-settings", **{"limit-user-organization-creation": False}))  # fmt: skip
    day.call(SITE, "user.grant_auditor", 200, "POST", f"{api}/admin/users/{stranger.id}/actions/grant_auditor")


def _events(env: RunEnv) -> list[AuditEvent]:
    now_us = int(time.time() * 1_000_000)
    window = (now_us - 3_600_000_000, now_us + 60_000_000, 10_000)
    return [
        event for organization in ("acme", SITE) for event in env.container.audit_store.between(organization, *window)
    ]


def test_every_action_kind_is_recorded_once_with_everything() -> None:
    env = make_run_env()
    day = Day(env)
    _a_day(day)
    events = _events(env)
    by_request: dict[str, list[AuditEvent]] = {}
    for event in events:
        by_request.setdefault(event.request_id, []).append(event)
    got = {rid: [(e.organization, e.action, e.outcome) for e in by_request.get(rid, [])] for rid in day.expected}
    assert got == {rid: [want] for rid, want in day.expected.items()}
    for rid in day.expected:
        (event,) = by_request[rid]
        assert event.timestamp and event.source and event.actor.kind and event.actor.id, event
        assert event.actor.token_id and event.actor.name or event.actor.kind == "agent", event
    assert SECRET not in json.dumps([repr(e) for e in events])
