"""The runner launcher port (`adapters/runner_launcher.py: RunnerLauncher`) on local processes
(`local_runner_launcher.py`, a stand-in `python` that records its environment and sleeps) and on ECS RunTask
(`ecs_runner_launcher.py`, moto: tasks are recorded, no container runs). What both promise: one runner per
credential, started with the launcher's environment and, over it, the runner's own (`runner_environment`: its
enrollment code, never a token, its id, when to retire, keep-warm); `launch` answers the token ids it started, in
order, each with what it started (an ECS task's ARN, to which the code is bound); `live` lists each live runner's
organization and token id, and nothing it did not start; at most the maximum are alive, a launch past it starts only
what fits; `retire` ends up to `count` runners of one organization and answers how many. A runner the launcher
retired leaves `live` once it has exited: at once on ECS (the task's desired status), when the process is gone
locally; the tests wait for that with a deadline."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from terrace.adapters.ecs_runner_launcher import EcsLauncher
from terrace.adapters.local_runner_launcher import LocalProcessLauncher
from terrace.adapters.runner_launcher import RunnerCredential, RunnerLauncher, runner_environment

LAUNCHERS = ["local", "ecs"]
BASE_ENV = {"TERRACE_API_URL": "https://terrace.example", "TERRACE_RUNNER_IDLE_EXIT_S": "60"}
DEADLINE_S = 30.0  # a loaded machine starts and stops processes slowly; never reached unless a clause is broken


@dataclass
class Subject:
    make: Callable[[int], RunnerLauncher]  # make(max_runners) -> a launcher with BASE_ENV as its environment
    environments: Callable[[int], dict[str, dict[str, str]]]  # runner id -> environment, once `count` started
    start_foreign: Callable[[], None]  # a runner-like thing this launcher did not start


def eventually(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def local_subject(tmp_path: Path) -> Iterator[Subject]:
    python = tmp_path / "python"
    python.write_text(
        "#!/bin/sh\n"
        f'env > "{tmp_path}/$TERRACE_RUNNER_ID.tmp" && mv "{tmp_path}/$TERRACE_RUNNER_ID.tmp" '
        f'"{tmp_path}/$TERRACE_RUNNER_ID.env"\n'
        "exec sleep 120\n"
    )
    python.chmod(0o755)
    made: list[LocalProcessLauncher] = []
    foreign: list[subprocess.Popen[bytes]] = []

    def make(max_runners: int) -> RunnerLauncher:
        made.append(LocalProcessLauncher({"PATH": os.environ["PATH"], **BASE_ENV}, max_runners, python=str(python)))
        return made[-1]

    def environments(count: int) -> dict[str, dict[str, str]]:
        assert eventually(lambda: len(list(tmp_path.glob("*.env"))) >= count), "the runners did not start"
        return {
            path.name.removesuffix(".env"): dict(line.split("=", 1) for line in path.read_text().splitlines())
            for path in tmp_path.glob("*.env")
        }

    def start_foreign() -> None:
        foreign.append(subprocess.Popen(["sleep", "120"]))

    yield Subject(make, environments, start_foreign)
    for launcher in made:
        launcher.stop_all(timeout_s=10)
    for process in foreign:
        process.kill()
        process.wait()


@pytest.fixture
def ecs_subject(moto_endpoint: str) -> Subject:
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing")
    ecs = session.client("ecs", endpoint_url=moto_endpoint, region_name="us-east-1")
    ec2 = session.client("ec2", endpoint_url=moto_endpoint, region_name="us-east-1")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})  # moto's ENI needs a DNS name
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName=f"runners-{vpc}", Description="runners", VpcId=vpc)["GroupId"]
    cluster = "terrace-" + uuid.uuid4().hex[:8]
    ecs.create_cluster(clusterName=cluster)
    task_definition = ecs.register_task_definition(
        family="terrace-runner",
        networkMode="awsvpc",
        requiresCompatibilities=["FARGATE"],
        cpu="512",
        memory="1024",
        containerDefinitions=[{"name": "runner", "image": "terrace-runner:latest", "memory": 1024}],
    )["taskDefinition"]["taskDefinitionArn"]
    network = {"awsvpcConfiguration": {"subnets": [subnet], "securityGroups": [group]}}

    def make(max_runners: int) -> RunnerLauncher:
        return EcsLauncher(
            ecs,
            cluster,
            task_definition,
            [subnet],
            [group],
            False,
            "runner",
            max_tasks=max_runners,
            environment=BASE_ENV,
        )

    def environments(count: int) -> dict[str, dict[str, str]]:
        arns = ecs.list_tasks(cluster=cluster)["taskArns"]
        found = {}
        for task in ecs.describe_tasks(cluster=cluster, tasks=arns)["tasks"] if arns else []:
            overrides: list[dict[str, Any]] = task.get("overrides", {}).get("containerOverrides", [])
            env = {e["name"]: e["value"] for o in overrides if o["name"] == "runner" for e in o["environment"]}
            if "TERRACE_RUNNER_ID" in env:
                found[env["TERRACE_RUNNER_ID"]] = env
        assert len(found) >= count, "the runners did not start"
        return found

    def start_foreign() -> None:
        ecs.run_task(
            cluster=cluster,
            taskDefinition=task_definition,
            count=1,
            launchType="FARGATE",
            startedBy="someone-else",
            networkConfiguration=network,
        )

    return Subject(make, environments, start_foreign)


@pytest.fixture(params=LAUNCHERS)
def subject(request: pytest.FixtureRequest) -> Subject:
    return request.getfixturevalue(f"{request.param}_subject")  # type: ignore[no-any-return]


def credential(organization: str, n: int, keep_warm: bool = False) -> RunnerCredential:
    return RunnerCredential(
        f"runner-{organization}-{n}",
        organization,
        f"at-{organization}-{n}",
        f"tre.code-{organization}-{n}",
        retire_at=1234 + n,
        keep_warm=keep_warm,
    )


def organizations(launcher: RunnerLauncher) -> Counter[str]:
    return Counter(runner.organization for runner in launcher.live())


def test_nothing_is_live_before_a_launch(subject: Subject) -> None:
    launcher = subject.make(3)
    assert launcher.live() == []
    assert launcher.launch([]) == {}
    assert launcher.live() == []


def test_one_runner_per_credential_each_with_its_own_environment_over_the_launchers(subject: Subject) -> None:
    launcher = subject.make(5)
    started = [credential("acme", 1), credential("acme", 2, keep_warm=True), credential("globex", 1)]
    assert list(launcher.launch(started)) == ["at-acme-1", "at-acme-2", "at-globex-1"]
    environments = subject.environments(3)
    assert sorted(environments) == sorted(c.runner_id for c in started)
    for c in started:
        env = environments[c.runner_id]
        own = runner_environment(c, with_code=not launcher.binds_identity)
        assert {k: env.get(k) for k in own} == own  # its id, retirement (and a local process's code)
        assert "TERRACE_RUNNER_TOKEN" not in env
        if launcher.binds_identity:  # an ECS task proves who it is: what DescribeTasks shows holds no code
            assert "TERRACE_RUNNER_ENROLLMENT_CODE" not in env and c.enrollment_code not in str(env)
        else:
            assert env["TERRACE_RUNNER_ENROLLMENT_CODE"] == c.enrollment_code
        assert env["TERRACE_API_URL"] == BASE_ENV["TERRACE_API_URL"]  # and the launcher's environment
        assert env["TERRACE_RUNNER_IDLE_EXIT_S"] == ("0" if c.keep_warm else "60")  # its own wins


def test_live_lists_each_runners_organization_and_token_and_nothing_else(subject: Subject) -> None:
    launcher = subject.make(5)
    subject.start_foreign()
    launcher.launch([credential("acme", 1), credential("acme", 2), credential("globex", 1)])
    assert sorted((r.organization, r.token_id) for r in launcher.live()) == [
        ("acme", "at-acme-1"),
        ("acme", "at-acme-2"),
        ("globex", "at-globex-1"),
    ]


def test_a_launch_past_the_maximum_starts_only_what_fits(subject: Subject) -> None:
    launcher = subject.make(2)
    assert list(launcher.launch([credential("acme", 1), credential("globex", 1), credential("globex", 2)])) == [
        "at-acme-1",
        "at-globex-1",
    ]
    assert launcher.launch([credential("acme", 2)]) == {}
    assert organizations(launcher) == {"acme": 1, "globex": 1}


def test_retire_ends_runners_of_one_organization_only(subject: Subject) -> None:
    launcher = subject.make(5)
    launcher.launch([credential("acme", 1), credential("acme", 2), credential("globex", 1)])
    assert launcher.retire("acme", 1) == 1
    assert eventually(lambda: organizations(launcher) == {"acme": 1, "globex": 1})
    assert launcher.retire("globex", 5) == 1  # as many as there are, no more
    assert launcher.retire("initech", 5) == 0
    assert eventually(lambda: organizations(launcher) == {"acme": 1})


def test_a_retired_runner_makes_room_under_the_maximum(subject: Subject) -> None:
    launcher = subject.make(1)
    assert list(launcher.launch([credential("acme", 1)])) == ["at-acme-1"]
    assert launcher.retire("acme", 1) == 1
    assert eventually(lambda: launcher.live() == [])
    assert list(launcher.launch([credential("globex", 1)])) == ["at-globex-1"]
    assert organizations(launcher) == {"globex": 1}


def test_launch_names_what_it_started_when_its_launcher_binds_codes(subject: Subject) -> None:
    """ECS answers each task's ARN (the enrollment is bound to it; the runner reads it from its metadata endpoint and
    proves it with its task role); local processes have no identity a runner could prove, so they answer None."""
    launcher = subject.make(2)
    started = launcher.launch([credential("acme", 1)])
    if launcher.binds_identity:
        assert (started["at-acme-1"] or "").startswith("arn:aws:ecs:") and ":task/" in (started["at-acme-1"] or "")
    else:
        assert started == {"at-acme-1": None}
