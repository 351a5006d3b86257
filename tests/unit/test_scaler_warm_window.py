"""The warm window (`services/runs/warm_window.py`): a workspace opened by a person or a CLI keeps one runner of its
organization for W minutes, on moto's ECS as the stack starts them (Fargate Spot, plans only, an idle exit of W)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from policy_helpers import member
from run_helpers import RunEnv, make_run_env
from table_writes import spy_writes
from terrace.adapters.ecs_runner_launcher import LANES_TAG, ORG_TAG, EcsLauncher
from terrace.domain import clock
from terrace.domain.principal import PrincipalKind
from terrace.runner.config import RunnerConfig
from terrace.runner.hand_back import HandBackRunner
from terrace.runner.main import build_runner
from terrace.services.runs import runner_slots, store_slots, warm_window
from terrace.web.ui.session import COOKIE
from test_runner_tenancy import _second_org

Ecs = tuple[Any, str, list[str], list[str]]


@pytest.fixture()
def ecs() -> Iterator[Ecs]:
    with mock_aws():
        client = boto3.client("ecs", region_name="us-east-1")
        ec2 = boto3.client("ec2", region_name="us-east-1")
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})  # moto's ENI needs a DNS name
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
        group = ec2.create_security_group(GroupName="runners", Description="runners", VpcId=vpc)["GroupId"]
        client.create_cluster(clusterName="terrace")
        client.put_cluster_capacity_providers(  # as the stack's cluster (infra/runner.py)
            cluster="terrace", capacityProviders=["FARGATE", "FARGATE_SPOT"], defaultCapacityProviderStrategy=[]
        )
        arn = client.register_task_definition(
            family="terrace-runner",
            networkMode="awsvpc",
            requiresCompatibilities=["FARGATE"],
            cpu="512",
            memory="2048",
            runtimePlatform={"cpuArchitecture": "ARM64", "operatingSystemFamily": "LINUX"},
            containerDefinitions=[{"name": "runner", "image": "terrace-runner:latest", "memory": 2048}],
        )["taskDefinition"]["taskDefinitionArn"]
        yield client, arn, [subnet], [group]


def window_env(ecs: Ecs, **settings: Any) -> tuple[RunEnv, Any]:
    client, arn, subnets, groups = ecs
    env = make_run_env(**{"warm_window_minutes": 15, **settings})
    _second_org(env)
    launcher = EcsLauncher(client, "terrace", arn, subnets, groups, False, "runner", spot_lanes=("speculative",))
    env.container.launcher = env.container.scaler.launcher = launcher
    return env, client


def tasks(client: Any) -> list[dict[str, Any]]:
    """The cluster's tasks still meant to run, with their tags, environment and capacity provider."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ecs.models import ecs_backends

    arns = client.list_tasks(cluster="terrace", desiredStatus="RUNNING")["taskArns"]
    if not arns:
        return []
    found = client.describe_tasks(cluster="terrace", tasks=arns, include=["TAGS"])["tasks"]
    backend = ecs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tasks["terrace"]
    return [
        {
            "tags": {t["key"]: t["value"] for t in task.get("tags", [])},
            "env": {e["name"]: e["value"] for e in task["overrides"]["containerOverrides"][0]["environment"]},
            "capacity": backend[task["taskArn"]].capacity_provider_name,
        }
        for task in found
    ]


def read_workspace(env: RunEnv, org: str = "acme", headers: dict[str, str] | None = None) -> None:
    """`terraform init`'s first read of the workspace."""
    path = f"/api/v2/organizations/{org}/workspaces/app"
    response = env.client.get(path, headers=headers or env.headers)
    assert response.status_code == 200, response.text


def later(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    now = clock.epoch()
    monkeypatch.setattr(clock, "epoch", lambda: now + seconds)


def test_a_workspace_read_by_a_user_starts_one_warm_runner_of_its_organization(
    ecs: Ecs, monkeypatch: pytest.MonkeyPatch
) -> None:
    env, client = window_env(ecs)
    scaler = env.container.scaler
    scaler.wake.clear()
    read_workspace(env)
    assert scaler.wake.is_set()  # the local scaler loop ticks at once; no run, no configuration version yet
    assert scaler.scale_once()["window"] == {"acme": 1}
    (task,) = tasks(client)
    assert task["tags"][ORG_TAG] == "acme" and task["tags"][LANES_TAG] == "plan,speculative"
    assert task["capacity"] == "FARGATE_SPOT"
    assert task["env"]["TERRACE_RUNNER_IDLE_EXIT_S"] == str(15 * 60)  # it leaves by itself after the window
    assert task["env"]["TERRACE_RUNNER_POLL_INTERVAL_S"] == "0.5"
    assert task["env"]["TERRACE_RUNNER_LANES"] == "plan,speculative"
    later(monkeypatch, warm_window.SIGNAL_EVERY_S + 1)
    read_workspace(env)  # a second read (a plan after init): the window moves on, no second runner
    assert scaler.scale_once()["window"] == {} and len(tasks(client)) == 1
    assert env.container.runner_slots.windows() == ["acme"]


def test_with_a_window_of_zero_a_read_starts_nothing(ecs: Ecs) -> None:
    env, client = window_env(ecs, warm_window_minutes=0)
    env.container.scaler.wake.clear()
    read_workspace(env)
    assert not env.container.scaler.wake.is_set()
    assert env.container.scaler.scale_once()["window"] == {} and tasks(client) == []


def test_only_people_and_teams_who_may_run_open_a_window_and_only_for_remote_execution(ecs: Ecs) -> None:
    env, client = window_env(ecs)
    org_token = env.container.accounts.issue_token(PrincipalKind.ORGANIZATION, "acme", organization="acme").secret
    read_workspace(env, headers={**env.headers, "Authorization": f"Bearer {org_token}"})
    assert env.container.scaler.scale_once()["window"] == {}  # an organization token cannot start a run
    reader = member(env, "rita", **{"read-workspaces": True})  # may read every workspace, queue no run
    read_workspace(env, headers={**env.headers, "Authorization": f"Bearer {reader}"})
    assert env.container.scaler.scale_once()["window"] == {}
    read_workspace(env)  # a member who may run, within the minute of the reader's read: it opens the window
    assert env.container.scaler.scale_once()["window"] == {"acme": 1}
    response = env.api("PATCH", "/organizations/globex/workspaces/app",
                       {"data": {"type": "workspaces", "attributes": {"execution-mode": "local"}}})  # fmt: skip
    assert response.status_code == 200, response.text
    read_workspace(env, "globex")  # its runs run on the laptop
    assert env.container.scaler.scale_once()["window"] == {} and len(tasks(client)) == 1


def test_a_warm_runner_counts_within_max_runners_and_gives_way_to_demand(
    ecs: Ecs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner_slots, "GRACE_S", -1)  # a runner gone frees its slot at once
    env, client = window_env(ecs, max_runners=1)
    read_workspace(env)
    assert env.container.scaler.scale_once()["window"] == {"acme": 1}
    globex = env.container.workspaces.get_by_name(env.container.accounts.authenticate(
        env.headers["Authorization"].removeprefix("Bearer ")), "globex", "app").id  # fmt: skip
    env.create_run(env.upload_config(workspace_id=globex), workspace_id=globex)
    summary = env.container.scaler.scale_once()  # no room: acme's idle warm runner goes, globex's run waits
    assert summary["retired"] == 1 and summary["blocked"] == 1 and summary["window"] == {}
    assert tasks(client) == []
    summary = env.container.scaler.scale_once()
    assert summary["started"] == {"globex": 1} and summary["window"] == {}  # demand first: acme's window waits
    assert [t["tags"][ORG_TAG] for t in tasks(client)] == ["globex"]


def test_a_warm_runner_takes_plans_and_a_plan_still_gets_a_runner_for_its_apply(ecs: Ecs) -> None:
    env, client = window_env(ecs, max_runners=4)
    read_workspace(env)
    assert env.container.scaler.scale_once()["window"] == {"acme": 1}
    run = env.create_run(env.upload_config(speculative=True))  # `terraform plan`: the warm runner takes it
    summary = env.container.scaler.scale_once()
    assert summary["started"] == {} and summary["window"] == {} and len(tasks(client)) == 1
    stored = env.container.run_store.load(run["id"])
    env.container.scheduler.finish(stored, stored.version, "discarded")
    env.create_run(env.upload_config())  # a plan to apply: its apply needs a runner that takes applies
    assert env.container.scaler.scale_once()["started"] == {"acme": 1}
    apply_runner, warm = sorted(tasks(client), key=lambda t: t["tags"][LANES_TAG])
    assert (apply_runner["tags"][LANES_TAG], warm["tags"][LANES_TAG]) == ("all", "plan,speculative")
    assert apply_runner["capacity"] == "FARGATE"  # an apply is never on Spot
    assert apply_runner["env"]["TERRACE_RUNNER_IDLE_EXIT_S"] == str(warm_window.APPLY_WAIT_S)  # it waits for it


def test_a_warm_runner_hands_a_plan_back_when_interrupted_and_keeps_no_folder_for_an_apply() -> None:
    base = {"TERRACE_API_URL": "https://terrace.example", "TERRACE_RUNNER_TOKEN": "at-x"}
    warm = build_runner(RunnerConfig.from_env({**base, "TERRACE_RUNNER_LANES": "plan,speculative"}))
    assert isinstance(warm, HandBackRunner) and not warm.takes_applies
    assert build_runner(RunnerConfig.from_env(base)).takes_applies


def test_on_aws_the_read_answers_before_the_scaler_is_invoked_and_signals_once_a_minute() -> None:
    env = make_run_env(warm_window_minutes=15)
    release, kicks, late = threading.Event(), [], []

    def kick(**kwargs: Any) -> None:  # an async Lambda invoke that takes its time
        if not release.wait(10):
            late.append(kwargs)  # only when the read waited for it: then the test released it after the read
        kicks.append(kwargs)

    env.container.scaler_kick = kick
    read_workspace(env)  # answered while the kick is blocked
    read_workspace(env)  # within the minute: no second signal
    release.set()
    deadline = clock.epoch() + 10
    while not kicks and clock.epoch() < deadline:
        release.wait(0.01)
    assert kicks == [{"warm": "acme"}] and late == []


def test_on_aws_an_organization_is_woken_once_a_minute_per_deployment_not_per_api_instance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The split: each API instance signals on its own (an async invoke, no table write: reads never write); the
    scaler invocation that takes the organization's wake claim ticks and readies the logs function (the CLI's first
    log read finds it started), the others return without a tick."""
    env = make_run_env(warm_window_minutes=15)
    kicks: list[dict[str, Any]] = []
    warmed: list[str] = []
    env.container.scaler_kick = lambda **kwargs: kicks.append(kwargs)
    env.container.logs_warm_up = lambda: warmed.append("logs function")
    writes = spy_writes(env.container.table, monkeypatch)

    def read_on_a_new_instance() -> None:
        """A read answered by another API Lambda instance: its own WarmWindow, the deployment's table."""
        env.container.__dict__.pop("warm_window", None)
        read_workspace(env)  # its signal is on the wake's one thread: done once a later task there is
        warm_window._background.submit(lambda: None).result(10)  # type: ignore[union-attr]  # noqa: SLF001

    for _ in range(3):
        read_on_a_new_instance()
    assert kicks == [{"warm": "acme"}] * 3 and writes == [] and warmed == []  # three invokes, no write

    def invocation(event: dict[str, Any]) -> dict[str, Any]:
        """A scaler invocation on an execution environment of its own (`functions/scaler/handler.py`)."""
        env.container.__dict__.pop("scaler", None)
        return env.container.scaler.scale_once(warm=[event["warm"]])

    summaries = [invocation(kick) for kick in kicks]
    assert ["skipped" not in summary for summary in summaries] == [True, False, False]  # one tick
    assert warmed == ["logs function"] and env.container.table.get(store_slots.WAKE_PK, "acme")  # the claim
    later(monkeypatch, warm_window.SIGNAL_EVERY_S + 1)
    assert "skipped" not in invocation({"warm": "acme"}) and len(warmed) == 2  # a minute on: woken again
    assert "skipped" not in env.container.scaler.scale_once(expect=["acme"], warm=["acme"])  # a run expected: ticks


def test_on_aws_a_failed_claim_still_ticks_and_a_failed_warm_up_does_not_stop_it() -> None:
    def unwritable(*_args: Any) -> float | None:
        raise RuntimeError("throttled")

    def failing_warm_up() -> None:
        raise RuntimeError("invoke failed")

    assert warm_window.take_wakes(["acme", "acme", "globex"], unwritable, failing_warm_up) == ["acme", "globex"]
    assert warm_window.take_wakes(["acme"], lambda *_args: 1e12) == []  # held by another invocation


def test_on_aws_the_wake_is_an_async_invoke_of_the_scaler_naming_the_organization(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    from terrace.adapters import boto_session
    from terrace.config import Settings
    from terrace.wiring.aws_adapters import invoke_scaler

    sent: list[dict[str, Any]] = []

    class Session:
        def client(self, *_args: Any, **_kwargs: Any) -> Any:
            return self

        def invoke(self, **kwargs: Any) -> None:
            sent.append({**kwargs, "Payload": json.loads(kwargs["Payload"])})

    monkeypatch.setattr(boto_session, "session", lambda _region: Session())
    invoke_scaler(Settings(table_name="t", blob_bucket="b"), "terrace-scaler", warm="acme")
    assert sent == [{"FunctionName": "terrace-scaler", "InvocationType": "Event", "Payload": {"warm": "acme"}}]


def test_a_person_opening_the_workspace_page_opens_the_window_and_neither_read_writes(
    ecs: Ecs, monkeypatch: pytest.MonkeyPatch
) -> None:
    env, client = window_env(ecs)
    cookie, _ = env.container.web_sessions.sign_in(env.headers["Authorization"].split()[1])
    writes = spy_writes(env.container.table, monkeypatch)
    env.container.scaler.wake.clear()
    page = env.client.get("/app/acme/workspaces/app", cookies={COOKIE: cookie})
    assert page.status_code == 200, page.text
    assert env.container.scaler.wake.is_set()  # the page signalled
    later(monkeypatch, warm_window.SIGNAL_EVERY_S + 1)
    read_workspace(env)
    assert writes == []  # the reads wake the dispatcher, which writes the window; they write nothing themselves
    monkeypatch.undo()
    assert env.container.scaler.scale_once()["window"] == {"acme": 1}


def test_a_runner_gone_within_the_window_is_replaced_and_none_starts_once_it_ended(
    ecs: Ecs, monkeypatch: pytest.MonkeyPatch
) -> None:
    env, client = window_env(ecs)
    read_workspace(env)
    assert env.container.scaler.scale_once()["window"] == {"acme": 1}

    def runner_exits() -> None:  # a Spot interruption, or its idle exit
        for arn in client.list_tasks(cluster="terrace", desiredStatus="RUNNING")["taskArns"]:
            client.stop_task(cluster="terrace", task=arn, reason="gone")

    runner_exits()
    later(monkeypatch, 5 * 60)
    assert env.container.scaler.scale_once()["window"] == {"acme": 1}  # the window is still open: a new one
    runner_exits()
    later(monkeypatch, 15 * 60 + 1)
    assert env.container.runner_slots.windows() == []
    assert env.container.scaler.scale_once()["window"] == {} and tasks(client) == []
