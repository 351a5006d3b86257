"""What the site admin's settings change in runs: plan-timeout and apply-timeout (admin/general-settings) end a
phase that runs longer, below the deployment's own phase deadline (`TERRACE_PHASE_DEADLINE_S`, 4 h by default,
which stays the ceiling); cost estimation off (admin/cost-estimation-settings) gives new runs no cost estimate."""

from __future__ import annotations

import pytest
from run_helpers import make_run_env
from terrace.domain import runs as rs
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services.runs import reaper


@pytest.mark.parametrize(("plan_timeout", "errored"), [("", False), ("1h", True), ("5h", False)])
def test_a_plan_longer_than_the_admins_plan_timeout_is_errored(
    monkeypatch: pytest.MonkeyPatch, plan_timeout: str, errored: bool
) -> None:
    env = make_run_env()
    admin = env.container.accounts.create_user("root", "root@example.com", site_admin=True)
    caller = Principal(PrincipalKind.USER, admin.id, admin.username, site_admin=True)
    env.container.admin_settings.update(caller, "general", {"plan-timeout": plan_timeout})
    run = env.create_run(env.upload_config())
    env.claim()
    assert env.run(run["id"])["attributes"]["status"] == rs.PLANNING
    later = reaper.clock.epoch() + 2 * 3600  # two hours on: past 1h, short of 5h and of the 4 h deadline
    monkeypatch.setattr(reaper.clock, "epoch", lambda: later)
    assert env.container.reaper.reap_once()["errored"] == (1 if errored else 0)
    assert (env.run(run["id"])["attributes"]["status"] == rs.ERRORED) is errored


def test_cost_estimation_off_gives_new_runs_no_estimate() -> None:
    env = make_run_env()
    admin = env.container.accounts.create_user("root", "root@example.com", site_admin=True)
    caller = Principal(PrincipalKind.USER, admin.id, admin.username, site_admin=True)
    estimated = env.create_run(env.upload_config())
    assert estimated["relationships"]["cost-estimate"]["data"] is not None
    env.container.admin_settings.update(caller, "cost-estimation", {"enabled": False})
    plain = env.create_run(env.upload_config())
    assert plain["relationships"]["cost-estimate"]["data"] is None
    # the organization reads so (TFE's; go-tfe v1.41's run helpers then wait for `planned`, not `cost_estimated`)
    assert (
        env.api("GET", f"/organizations/{env.organization}").json()["data"]["attributes"]["cost-estimation-enabled"]
        is False
    )
    # and an organization created meanwhile is answered as it is then read (go-tfe v1.109's TestOrganizationsRead
    # compares the two)
    created = env.api(
        "POST",
        "/organizations",
        {"data": {"type": "organizations", "attributes": {"name": "later", "email": "l@x.io"}}},
    )
    read = env.api("GET", "/organizations/later")
    assert created.status_code == 201, created.text
    assert created.json()["data"]["attributes"]["cost-estimation-enabled"] is False
    assert read.json()["data"]["attributes"] == created.json()["data"]["attributes"]
