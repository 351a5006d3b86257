"""EcsLauncher against moto ECS (moto records tasks but runs no container)."""

from __future__ import annotations

import json
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
        client.put_cluster_capacity_providers(  # as the stack's cluster (infra/runner.py)
            cluster="terrace", capacityProviders=["FARGATE", "FARGATE_SPOT"], defaultCapacityProviderStrategy=[]
        )
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


def capacity_of(task_arn: str) -> str:
    """The capacity provider moto recorded for a task (its DescribeTasks does not show it)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ecs.models import ecs_backends

    return str(ecs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tasks["terrace"][task_arn].capacity_provider_name)


def launcher(client: Any, arn: str, **kwargs: Any) -> EcsLauncher:
    return EcsLauncher(client, "terrace", arn, [SUBNET], [GROUP], False, "runner", **kwargs)


def creds(org: str, count: int, start: int = 0) -> list[RunnerCredential]:
    return [
        RunnerCredential(f"runner-{n}", org, f"at-{org}-{n}", f"tre.code-{org}-{n}", 1234)
        for n in range(start, start + count)
    ]


def test_launch_one_task_per_runner_tagged_with_its_organization_and_token(ecs: tuple[Any, str]) -> None:
    client, arn = ecs
    ecs_launcher = launcher(client, arn, environment={"TERRACE_RUNNER_IDLE_EXIT_S": "60"})
    assert ecs_launcher.live() == []
    started = ecs_launcher.launch(creds("acme", 2) + creds("globex", 1))
    assert list(started) == ["at-acme-0", "at-acme-1", "at-globex-0"]
    assert Counter(r.organization for r in ecs_launcher.live()) == {"acme": 2, "globex": 1}
    assert {r.token_id for r in ecs_launcher.live()} == {"at-acme-0", "at-acme-1", "at-globex-0"}
    tasks = client.describe_tasks(cluster="terrace", tasks=client.list_tasks(cluster="terrace")["taskArns"])["tasks"]
    assert sorted(started.values()) == sorted(t["taskArn"] for t in tasks)  # each started task named by its ARN
    assert all(t["startedBy"] == STARTED_BY for t in tasks)
    assert {capacity_of(t["taskArn"]) for t in tasks} == {"FARGATE"}  # a runner taking every lane: never Spot
    envs = [{e["name"]: e["value"] for e in t["overrides"]["containerOverrides"][0]["environment"]} for t in tasks]
    by_org = sorted((e["TERRACE_RUNNER_ORGANIZATION"], e["TERRACE_RUNNER_ENROLLMENT_CODE"]) for e in envs)
    assert by_org == [("acme", "tre.code-acme-0"), ("acme", "tre.code-acme-1"), ("globex", "tre.code-globex-0")]
    assert not any("TERRACE_RUNNER_TOKEN" in e for e in envs)  # what DescribeTasks shows holds no token
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


def test_a_speculative_runner_starts_on_fargate_spot_and_says_so_in_its_tags(ecs: tuple[Any, str]) -> None:
    client, arn = ecs
    ecs_launcher = launcher(client, arn, spot_lanes=("speculative",))
    speculative = RunnerCredential("runner-s", "acme", "at-s", "tre.code-s", 1234, lanes=("speculative",))
    started = ecs_launcher.launch([speculative, *creds("acme", 1)])
    assert capacity_of(started["at-s"] or "") == "FARGATE_SPOT" and capacity_of(started["at-acme-0"] or "") == "FARGATE"
    assert {r.token_id: r.lanes for r in ecs_launcher.live()} == {"at-s": ("speculative",), "at-acme-0": ()}
    (task,) = client.describe_tasks(cluster="terrace", tasks=[started["at-s"]])["tasks"]
    env = {e["name"]: e["value"] for e in task["overrides"]["containerOverrides"][0]["environment"]}
    assert env["TERRACE_RUNNER_LANES"] == "speculative"  # the runner takes speculative plans only
    plain = launcher(client, arn)  # a deployment without Spot lanes: FARGATE whatever the runner's lanes
    assert capacity_of(plain.launch([speculative])["at-s"] or "") == "FARGATE"


def test_when_fargate_spot_has_no_capacity_the_runner_starts_on_fargate_at_once(ecs: tuple[Any, str]) -> None:
    """ECS has no fallback between capacity providers: RunTask answers a failure when Spot has no capacity (moto
    never does, so a botocore hook answers it as AWS would) and the launcher asks FARGATE."""
    client, arn = ecs
    asked: list[str] = []

    def no_spot(params: dict[str, Any], **_: Any) -> Any:
        capacity = json.loads(params["body"])["capacityProviderStrategy"][0]["capacityProvider"]  # the request sent
        asked.append(capacity)
        if capacity != "FARGATE_SPOT":
            return None  # on to moto
        reason = "Capacity is unavailable at this time. Please try again later or in a different availability zone"
        return type("Http", (), {"status_code": 200})(), {"tasks": [], "failures": [{"reason": reason}]}

    client.meta.events.register("before-call.ecs.RunTask", no_spot)
    ecs_launcher = launcher(client, arn, spot_lanes=("speculative",))
    ecs_launcher.backoff_s = 0
    credential = RunnerCredential("runner-s", "acme", "at-s", "tre.code-s", 1234, lanes=("speculative",))
    started = ecs_launcher.launch([credential])
    assert asked == ["FARGATE_SPOT", "FARGATE"]
    assert capacity_of(started["at-s"] or "") == "FARGATE"
    assert ecs_launcher.spot_fallbacks == 1 and ecs_launcher.failures == 0
    assert [r.lanes for r in ecs_launcher.live()] == [("speculative",)]  # still a speculative-only runner


@pytest.fixture()
def metadata_endpoint() -> Iterator[tuple[str, list[str]]]:
    """An ECS container metadata endpoint (v4) on localhost: GET /task answers the task ARN `arns[0]`."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    arns: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = json.dumps({"TaskARN": arns[0], "Cluster": "terrace"}).encode() if self.path == "/v4/x/task" else b""
            self.send_response(200 if body else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)  # quick stop
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v4/x", arns
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_a_task_enrolls_with_its_own_arn_from_the_metadata_endpoint(
    ecs: tuple[Any, str], metadata_endpoint: tuple[str, list[str]]
) -> None:
    """The scaler starts a task on ECS (moto) with an enrollment code bound to the ARN RunTask answered; the runner
    reads its ARN from the container metadata endpoint and gets its token; a code presented for another task is
    refused."""
    import httpx
    from fastapi.testclient import TestClient
    from terrace.bootstrap import build_memory
    from terrace.config import Settings
    from terrace.runner.client import ApiError
    from terrace.runner.enrollment import enroll, own_task_arn
    from terrace.web.app import create_app

    client, arn = ecs
    container = build_memory(Settings(table_name="t", blob_bucket="b", url_signing_secret="s"))
    container.launcher = container.scaler.launcher = launcher(client, arn)
    assert container.scaler.scale_once(expect=["acme"])["started"] == {"acme": 1}
    listed = client.list_tasks(cluster="terrace")["taskArns"]
    (task,) = client.describe_tasks(cluster="terrace", tasks=listed, include=["TAGS"])["tasks"]
    env = {e["name"]: e["value"] for e in task["overrides"]["containerOverrides"][0]["environment"]}
    code = env["TERRACE_RUNNER_ENROLLMENT_CODE"]
    api = TestClient(create_app(container))

    def through_app(request: httpx.Request) -> httpx.Response:
        answer = api.request(request.method, request.url.path, content=request.content, headers=request.headers)
        return httpx.Response(answer.status_code, content=answer.content)

    url, arns = metadata_endpoint
    arns.append(task["taskArn"].replace(task["taskArn"][-6:], "ffffff"))  # another task presents the code
    with pytest.raises(ApiError) as refused:
        enroll(
            "https://t",
            code,
            own_task_arn({"ECS_CONTAINER_METADATA_URI_V4": url}),
            transport=httpx.MockTransport(through_app),
        )
    assert refused.value.status == 401
    arns[0] = task["taskArn"]  # the task itself
    enrolled = enroll(
        "https://t",
        code,
        own_task_arn({"ECS_CONTAINER_METADATA_URI_V4": url}),
        transport=httpx.MockTransport(through_app),
    )
    tags = {t["key"]: t["value"] for t in task["tags"]}
    assert enrolled.organization == "acme" and enrolled.token_id == tags["terrace:runner-token"]
    principal = container.accounts.authenticate(enrolled.token)
    assert principal.organization == "acme"
