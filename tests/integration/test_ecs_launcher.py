"""EcsLauncher against moto ECS (moto records tasks but runs no container)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from terrace.adapters.ecs_runner_launcher import STARTED_BY, EcsLauncher
from terrace.adapters.runner_launcher import RunnerCredential

SUBNET = GROUP = ""


@pytest.fixture()
def ecs() -> Iterator[tuple[Any, str]]:
    global SUBNET, GROUP
    with mock_aws():
        client = boto3.client("ecs", region_name="us-east-1")
        ec2 = boto3.client("ec2", region_name="us-east-1")
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})  # moto's ENI needs a DNS name
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
        client.create_cluster(clusterName="terrace")
        arn = client.register_task_definition(
            family="terrace-runner",
            networkMode="awsvpc",
            requiresCompatibilities=["FARGATE"],
            cpu="512",
            memory="1024",
            containerDefinitions=[{"name": "runner", "image": "terrace-runner:latest", "memory": 1024}],
        )["taskDefinition"]["taskDefinitionArn"]
        SUBNET = subnet
        GROUP = ec2.create_security_group(GroupName="runners", Description="runners", VpcId=vpc)["GroupId"]
        yield client, arn


def launcher(client: Any, arn: str, **kwargs: Any) -> EcsLauncher:
    return EcsLauncher(client, "terrace", arn, [SUBNET], [GROUP], False, "runner", **kwargs)


def creds(org: str, count: int, start: int = 0) -> list[RunnerCredential]:
    return [
        RunnerCredential(f"runner-{n}", org, f"at-{org}-{n}", f"secret-{org}-{n}", 1234)
        for n in range(start, start + count)
    ]


def test_launch_one_task_per_runner_tagged_with_its_organization_and_token(ecs: tuple[Any, str]) -> None:
    client, arn = ecs
    ecs_launcher = launcher(client, arn, environment={"TERRACE_RUNNER_IDLE_EXIT_S": "60"})
    assert ecs_launcher.live() == []
    assert ecs_launcher.launch(creds("acme", 2) + creds("globex", 1)) == ["at-acme-0", "at-acme-1", "at-globex-0"]
    assert Counter(r.organization for r in ecs_launcher.live()) == {"acme": 2, "globex": 1}
    assert {r.token_id for r in ecs_launcher.live()} == {"at-acme-0", "at-acme-1", "at-globex-0"}
    tasks = client.describe_tasks(cluster="terrace", tasks=client.list_tasks(cluster="terrace")["taskArns"])["tasks"]
    assert all(t["startedBy"] == STARTED_BY for t in tasks)
    assert all(t["launchType"] == "FARGATE" for t in tasks)
    envs = [{e["name"]: e["value"] for e in t["overrides"]["containerOverrides"][0]["environment"]} for t in tasks]
    by_org = sorted((e["TERRACE_RUNNER_ORGANIZATION"], e["TERRACE_RUNNER_TOKEN"]) for e in envs)
    assert by_org == [("acme", "secret-acme-0"), ("acme", "secret-acme-1"), ("globex", "secret-globex-0")]
    assert all(e["TERRACE_RUNNER_IDLE_EXIT_S"] == "60" and e["TERRACE_RUNNER_RETIRE_AT"] == "1234" for e in envs)


def test_retire_stops_tasks_of_one_organization(ecs: tuple[Any, str]) -> None:
    client, arn = ecs
    ecs_launcher = launcher(client, arn)
    ecs_launcher.launch(creds("acme", 2) + creds("globex", 1))
    assert ecs_launcher.retire("globex", 5) == 1
    assert Counter(r.organization for r in ecs_launcher.live()) == {"acme": 2}


def test_max_tasks_and_other_tasks_are_not_counted(ecs: tuple[Any, str]) -> None:
    client, arn = ecs
    client.run_task(
        cluster="terrace",
        taskDefinition=arn,
        count=2,
        launchType="FARGATE",
        startedBy="someone-else",
        networkConfiguration={"awsvpcConfiguration": {"subnets": [SUBNET], "securityGroups": [GROUP]}},
    )
    capped = launcher(client, arn, max_tasks=4)
    assert len(capped.launch(creds("acme", 3))) == 3
    assert len(capped.launch(creds("acme", 3, start=3))) == 1
    assert capped.live_count() == 4
    task_arns = client.list_tasks(cluster="terrace", startedBy=STARTED_BY)["taskArns"]
    client.stop_task(cluster="terrace", task=task_arns[0])
    assert capped.live_count() == 3
