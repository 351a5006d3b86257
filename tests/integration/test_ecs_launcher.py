"""EcsLauncher against moto ECS (moto records tasks but runs no container)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from terrace.adapters.runner_launchers import STARTED_BY, EcsLauncher

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


def test_launch_counts_and_tags_tasks(ecs: tuple[Any, str]) -> None:
    client, arn = ecs
    ecs_launcher = launcher(client, arn, environment={"TERRACE_RUNNER_IDLE_EXIT_S": "60"})
    assert ecs_launcher.live_count() == 0
    assert ecs_launcher.launch(3) == 3
    assert ecs_launcher.live_count() == 3
    tasks = client.describe_tasks(cluster="terrace", tasks=client.list_tasks(cluster="terrace")["taskArns"])["tasks"]
    assert all(t["startedBy"] == STARTED_BY for t in tasks)
    assert all(t["launchType"] == "FARGATE" for t in tasks)


def test_launch_batches_above_ten(ecs: tuple[Any, str]) -> None:
    client, arn = ecs
    calls: list[int] = []
    original = client.run_task

    def spy(**kwargs: Any) -> Any:
        calls.append(kwargs["count"])
        assert kwargs["networkConfiguration"]["awsvpcConfiguration"]["assignPublicIp"] == "DISABLED"
        return original(**kwargs)

    client.run_task = spy
    assert launcher(client, arn).launch(23) == 23
    assert calls == [10, 10, 3]
    assert launcher(client, arn).live_count() == 23


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
    assert capped.launch(3) == 3
    assert capped.launch(3) == 1
    assert capped.live_count() == 4
    task_arns = client.list_tasks(cluster="terrace", startedBy=STARTED_BY)["taskArns"]
    client.stop_task(cluster="terrace", task=task_arns[0])
    assert capped.live_count() == 3
