"""The scaler starts a runner when a configuration version is created, before its run exists (the runner's
start overlaps the upload), within the per-organization and global maxima; and keeps warm runners."""

from __future__ import annotations

from typing import Any

from run_helpers import RunEnv, make_run_env
from terrace.adapters.runner_launcher import runner_environment
from terrace.domain.principal import PrincipalKind
from test_runner_tenancy import FakeLauncher, _second_org, enrolled


def scaler_env(**settings: Any) -> tuple[RunEnv, str, FakeLauncher]:
    env = make_run_env(**settings)
    globex_ws = _second_org(env)
    launcher = FakeLauncher()
    env.container.launcher = env.container.scaler.launcher = launcher
    env.container.scaler.scale_once()  # nothing to do yet (but keep warm runners)
    assert launcher.runners == []  # warm runners too wait for an organization to have had work
    return env, globex_ws, launcher


def new_workspace(env: RunEnv, name: str, **attributes: Any) -> str:
    body = {"data": {"type": "workspaces", "attributes": {"name": name, **attributes}}}
    response = env.api("POST", "/organizations/acme/workspaces", body)
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


def test_creating_a_configuration_version_starts_a_runner_before_the_run_exists() -> None:
    env, _, launcher = scaler_env()
    scaler = env.container.scaler
    scaler.wake.clear()
    cv_id = env.upload_config()  # POST configuration-versions (+ the upload); no run yet
    assert env.container.run_store.list_for_workspace(env.workspace_id) == []
    assert scaler.wake.is_set()  # the local scaler loop ticks at once
    assert scaler.scale_once()["started"] == {"acme": 1}
    (credential,) = launcher.runners
    token = enrolled(env, credential)
    principal = env.container.accounts.authenticate(token)
    assert principal.kind is PrincipalKind.RUNNER and principal.organization == "acme"
    env.create_run(cv_id)  # the run comes: the runner already there serves it, no second one
    assert scaler.scale_once()["started"] == {}
    assert env.claim("r1", token=token)["organization"] == "acme"


def test_an_expectation_ends_when_its_run_came_and_went() -> None:
    env, _, launcher = scaler_env(max_runners=1)
    run = env.create_run(env.upload_config())
    env.container.scaler.scale_once()
    stored = env.container.run_store.load(run["id"])
    env.container.scheduler.finish(stored, stored.version, "discarded")
    launcher.runners.clear()  # the runner idled out
    assert env.container.scaler.scale_once()["started"] == {}  # the expectation was the run, now ended


def test_a_local_execution_workspace_starts_no_runner() -> None:
    env, _, launcher = scaler_env()
    ws = new_workspace(env, "laptop", **{"execution-mode": "local"})
    env.upload_config(workspace_id=ws)
    assert env.container.scaler.scale_once()["started"] == {} and launcher.runners == []


def test_expected_runners_respect_the_per_organization_and_global_maxima() -> None:
    env, globex_ws, launcher = scaler_env(max_runners=2, max_runners_per_organization=1)
    for n in range(3):
        ws = new_workspace(env, f"w{n}")
        env.create_run(env.upload_config(workspace_id=ws), workspace_id=ws)
    assert env.container.scaler.scale_once()["started"] == {"acme": 1}  # 3 jobs, but 1 runner per organization
    env.upload_config(workspace_id=globex_ws)
    assert env.container.scaler.scale_once()["started"] == {"globex": 1}
    env.container.scaler.expect("initech")  # a third organization, with no room left
    summary = env.container.scaler.scale_once()
    assert summary["started"] == {} and len(launcher.runners) == 2 and launcher.retired == []


def test_the_api_on_aws_invokes_the_scaler_with_the_expected_organization() -> None:
    env = make_run_env()
    kicks: list[dict[str, Any]] = []
    env.container.scaler_kick = lambda **kwargs: kicks.append(kwargs)
    env.upload_config()
    env.upload_config(speculative=True)  # `terraform plan`: a runner of the speculative lane (Spot on AWS)
    assert kicks == [{"expect": "acme", "speculative": False}, {"expect": "acme", "speculative": True}]


def test_a_speculative_configuration_version_expects_a_runner_of_the_speculative_lane(monkeypatch: Any) -> None:
    monkeypatch.setattr(FakeLauncher, "spot_lanes", ("speculative",))
    env, _, launcher = scaler_env()
    env.upload_config(speculative=True)
    assert env.container.scaler.scale_once()["started_for_spot_lanes"] == 1
    (credential,) = launcher.runners
    assert credential.lanes == ("speculative",)


def test_warm_runners_are_kept_for_the_organizations_that_ran_lately_within_the_maximum() -> None:
    env, globex_ws, launcher = scaler_env(max_runners=3, warm_runners=1)
    run = env.create_run(env.upload_config())  # acme has work: a runner for it; acme is now a recent organization
    assert env.container.scaler.scale_once()["started"] == {"acme": 1}
    stored = env.container.run_store.load(run["id"])
    env.container.scheduler.finish(stored, stored.version, "discarded")
    launcher.runners.clear()  # its runner finished and idled out
    summary = env.container.scaler.scale_once()
    assert summary["warm"] == {"acme": 1}  # acme keeps a warm runner; globex, which never ran, gets none
    assert all(c.keep_warm and runner_environment(c)["TERRACE_RUNNER_IDLE_EXIT_S"] == "0" for c in launcher.runners)
    assert env.container.scaler.scale_once()["warm"] == {}  # kept, not added to
    env.create_run(env.upload_config())  # acme's warm runner covers its next job
    assert env.container.scaler.scale_once()["started"] == {}
    env.create_run(env.upload_config(workspace_id=globex_ws), workspace_id=globex_ws)
    assert env.container.scaler.scale_once()["started"] == {"globex": 1}
    assert set(env.container.runner_slots.recent()) == {
        "acme", "globex"}  # fmt: skip


def test_an_organization_without_work_for_a_day_loses_its_warm_runner(monkeypatch: Any) -> None:
    from terrace.domain import clock
    from terrace.services.runs import runner_slots

    env, _, launcher = scaler_env(max_runners=3, warm_runners=1)
    run = env.create_run(env.upload_config())
    env.container.scaler.scale_once()
    stored = env.container.run_store.load(run["id"])
    env.container.scheduler.finish(stored, stored.version, "discarded")
    launcher.runners.clear()
    assert env.container.scaler.scale_once()["warm"] == {"acme": 1}  # within the day: kept warm
    launcher.runners.clear()  # the warm runner retired with its token
    now = clock.epoch()
    monkeypatch.setattr(clock, "epoch", lambda: now + runner_slots.RECENT_S + 1)
    assert env.container.scaler.scale_once()["warm"] == {} and launcher.runners == []


def test_real_demand_takes_the_room_before_warm_runners(monkeypatch: Any) -> None:
    from terrace.services.runs import runner_slots

    monkeypatch.setattr(runner_slots, "GRACE_S", -1)  # a runner gone frees its slot at once
    env, _, launcher = scaler_env(max_runners=1, warm_runners=1)
    run = env.create_run(env.upload_config())
    assert env.container.scaler.scale_once()["started"] == {"acme": 1}
    stored = env.container.run_store.load(run["id"])
    env.container.scheduler.finish(stored, stored.version, "discarded")
    launcher.runners.clear()
    assert env.container.scaler.scale_once()["warm"] == {"acme": 1}
    (warm,) = launcher.runners
    assert warm.organization == "acme"  # one room: acme's warm runner
    ws = env.api(
        "POST", "/organizations/globex/workspaces", {"data": {"type": "workspaces", "attributes": {"name": "b"}}}
    ).json()["data"]["id"]
    env.create_run(env.upload_config(workspace_id=ws), workspace_id=ws)
    assert env.container.scaler.scale_once()["retired"] == 1  # globex waits: acme's idle warm runner goes
    assert launcher.retired == [("acme", 1)]


def test_the_maxima_and_warm_runners_come_from_the_environment() -> None:
    from terrace.config import Settings

    env = {"TERRACE_TABLE": "t", "TERRACE_BLOB_BUCKET": "b", "TERRACE_MAX_RUNNERS_PER_ORGANIZATION": "3"}
    settings = Settings.from_env({**env, "TERRACE_WARM_RUNNERS": "1"})
    assert (settings.max_runners_per_organization, settings.warm_runners) == (3, 1)
    assert Settings.from_env({"TERRACE_TABLE": "t", "TERRACE_BLOB_BUCKET": "b"}).warm_runners == 0
