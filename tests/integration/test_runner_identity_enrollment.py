"""A runner task enrolls by proving who it is, on moto: the scaler starts a task on ECS with no secret in its
overrides (what `ecs:DescribeTasks` shows), the runner signs an `sts:GetCallerIdentity` with the runner task role's
session named by its task id (as ECS names it) and the API, which sends the request to the STS endpoint it trusts,
gives it its token. Forged proofs (another role, the role's session of another task, a proof signed for another
server, a request to another URL, another STS action, the enrollment code alone) are refused 401 and change
nothing; a second proven enrollment of the task revokes the token the first gave."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import httpx
import pytest
from fastapi.testclient import TestClient
from terrace.adapters.ecs_runner_launcher import EcsLauncher
from terrace.adapters.runner_launcher import RunnerCredential
from terrace.adapters.sts_caller_identity import StsCallerIdentity
from terrace.bootstrap import Container, build_memory
from terrace.config import Settings
from terrace.domain.jobs import SignedRequest
from terrace.domain.runner_identity import task_id
from terrace.runner.client import ApiError
from terrace.runner.enrollment import enroll, identity_proof
from terrace.runner.sigv4 import Credentials
from terrace.web.app import create_app

API = "https://terrace.example"
TRUST = json.dumps({"Statement": [{"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}}]})


class RecordingLauncher(EcsLauncher):
    """The ECS launcher, keeping what it was given (the test's view of the server's enrollment codes)."""

    given: list[RunnerCredential]

    def launch(self, credentials: list[RunnerCredential]) -> dict[str, str | None]:
        self.given.extend(credentials)
        return super().launch(credentials)


@dataclass
class Deployment:
    container: Container
    api: TestClient
    aws: dict[str, Any]
    endpoint: str
    role_arn: str
    task: dict[str, Any]
    code: str

    def credentials(self, role_arn: str, session: str) -> Credentials:
        found = self.aws["sts"].assume_role(RoleArn=role_arn, RoleSessionName=session)["Credentials"]
        return Credentials(found["AccessKeyId"], found["SecretAccessKey"], found["SessionToken"])

    def proof(self, role_arn: str | None = None, session: str | None = None, server: str = API) -> SignedRequest:
        """A GetCallerIdentity signed by `role_arn`'s session `session` (by default: this task's runner role)."""
        credentials = self.credentials(role_arn or self.role_arn, session or task_id(self.task["taskArn"]))
        return identity_proof(server, self.endpoint, "us-east-1", credentials)

    def enroll(self, proof: SignedRequest, task_arn: str | None = None, code: str | None = None) -> Any:
        body = {"task_arn": task_arn or self.task["taskArn"], "identity": proof.model_dump(), "code": code}
        return self.api.post("/api/runner/enroll", json=body)


@pytest.fixture()
def deployment(endpoint: str) -> Iterator[Deployment]:
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    aws = {name: session.client(name, endpoint_url=endpoint) for name in ("ecs", "ec2", "iam", "sts")}
    vpc = aws["ec2"].create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    aws["ec2"].modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})
    subnet = aws["ec2"].create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    suffix = uuid.uuid4().hex[:8]  # the moto server is the module's: each test its own cluster and roles
    cluster = f"terrace-{suffix}"
    aws["ecs"].create_cluster(clusterName=cluster)
    aws["ecs"].put_cluster_capacity_providers(
        cluster=cluster, capacityProviders=["FARGATE", "FARGATE_SPOT"], defaultCapacityProviderStrategy=[]
    )
    role_arn = aws["iam"].create_role(RoleName=f"terrace-runner-{suffix}", AssumeRolePolicyDocument=TRUST)["Role"][
        "Arn"
    ]
    definition = aws["ecs"].register_task_definition(
        family="terrace-runner",
        networkMode="awsvpc",
        requiresCompatibilities=["FARGATE"],
        cpu="512",
        memory="1024",
        taskRoleArn=role_arn,
        containerDefinitions=[{"name": "runner", "image": "terrace-runner:latest", "memory": 1024}],
    )["taskDefinition"]["taskDefinitionArn"]
    settings = Settings(
        table_name="t", blob_bucket="b", url_signing_secret="s", public_url=API, runner_task_role_arn=role_arn
    )
    container = build_memory(settings)
    container.caller_identity = StsCallerIdentity(endpoint + "/")
    launcher = RecordingLauncher(aws["ecs"], cluster, definition, [subnet], [], False, "runner")
    launcher.given = []
    container.launcher = container.scaler.launcher = launcher
    assert container.scaler.scale_once(expect=["acme"])["started"] == {"acme": 1}
    listed = aws["ecs"].list_tasks(cluster=cluster)["taskArns"]
    (task,) = aws["ecs"].describe_tasks(cluster=cluster, tasks=listed, include=["TAGS"])["tasks"]
    (credential,) = launcher.given
    try:
        yield Deployment(
            container,
            TestClient(create_app(container)),
            aws,
            endpoint + "/",
            role_arn,
            task,
            credential.enrollment_code,
        )
    finally:
        aws["ecs"].stop_task(cluster=cluster, task=task["taskArn"])


def refused(response: Any) -> bool:
    return response.status_code == 401 and "token" not in response.json()


def test_the_enrollment_code_is_not_in_what_describe_tasks_shows(deployment: Deployment) -> None:
    cluster = deployment.task["clusterArn"]
    described = deployment.aws["ecs"].describe_tasks(cluster=cluster, tasks=[deployment.task["taskArn"]])
    assert deployment.code not in json.dumps(described, default=str)
    env = {e["name"] for e in deployment.task["overrides"]["containerOverrides"][0]["environment"]}
    assert "TERRACE_RUNNER_ENROLLMENT_CODE" not in env and "TERRACE_RUNNER_TOKEN" not in env
    # and the code, were it known, enrolls no task: only the task's proof does
    assert refused(deployment.api.post("/api/runner/enroll", json={"code": deployment.code}))


def test_forged_proofs_are_refused_and_change_nothing(deployment: Deployment, caplog: pytest.LogCaptureFixture) -> None:
    d, own = deployment, task_id(deployment.task["taskArn"])
    caplog.set_level(logging.WARNING, logger="terrace.enrollment")
    other_role = d.aws["iam"].create_role(
        RoleName=f"someone-else-{uuid.uuid4().hex[:8]}", AssumeRolePolicyDocument=TRUST
    )["Role"]["Arn"]
    assert refused(d.enroll(d.proof(role_arn=other_role, session=own)))  # another role, the task's id as session
    assert refused(d.enroll(d.proof(session="fedcba9876543210")))  # the runner role, another task's session
    assert refused(d.enroll(d.proof(server="https://another-terrace.example")))  # signed for another server
    elsewhere = d.proof().model_copy(update={"url": "http://169.254.169.254/latest/"})
    assert refused(d.enroll(elsewhere))  # a request to anywhere but the trusted STS endpoint: never sent
    other_action = d.proof().model_copy(update={"body": "Action=GetSessionToken&Version=2011-06-15"})
    assert refused(d.enroll(other_action))  # another STS action
    tampered = d.proof()
    tampered.headers["X-Terrace-Server-ID"] = API  # unchanged value, but now try an unsigned extra header
    tampered.headers["X-Forwarded-For"] = "10.0.0.1"
    assert refused(d.enroll(tampered))
    unsigned = d.proof()
    unsigned.headers["Authorization"] = unsigned.headers["Authorization"].replace(";x-terrace-server-id", "")
    assert refused(d.enroll(unsigned))  # the server id must be signed
    reasons = [r.getMessage().split(": ", 1)[1] for r in caplog.records if "refused the enrollment" in r.getMessage()]
    assert [reason[:24] for reason in reasons] == [
        "signed by 'arn:aws:sts::",  # someone-else's session
        "signed by 'arn:aws:sts::",  # the runner role's session of another task
        "signed for server 'https",
        "a request to 'http://169",
        "another action: 'Action=",
        "unexpected headers ['x-f",
        "headers not signed: ['x-",
    ]
    assert "someone-else" in reasons[0] and "fedcba9876543210" in reasons[1]
    # a genuine proof of the role's session of another task proves that task, not this one
    other_task = d.task["taskArn"].rsplit("/", 1)[0] + "/fedcba9876543210"
    assert d.enroll(d.proof(session="fedcba9876543210"), task_arn=other_task).status_code == 409  # not ours
    # nothing above spent the enrollment: the task still enrolls
    assert d.enroll(d.proof()).status_code == 200


def test_the_task_enrolls_with_its_proof_once(deployment: Deployment) -> None:
    d = deployment

    def through_app(request: httpx.Request) -> httpx.Response:
        answer = d.api.request(request.method, request.url.path, content=request.content, headers=request.headers)
        return httpx.Response(answer.status_code, content=answer.content)

    transport = httpx.MockTransport(through_app)
    enrolled = enroll(API, None, d.task["taskArn"], transport=transport, identity=d.proof())
    tags = {t["key"]: t["value"] for t in d.task["tags"]}
    assert enrolled.organization == "acme" and enrolled.token_id == tags["terrace:runner-token"]
    assert d.container.accounts.authenticate(enrolled.token).organization == "acme"
    with pytest.raises(ApiError) as again:  # a second proven enrollment: someone else enrolled as the task
        enroll(API, None, d.task["taskArn"], transport=transport, identity=d.proof())
    assert again.value.status == 401
    with pytest.raises(Exception):  # noqa: B017 -- the token the first gave is revoked
        d.container.accounts.authenticate(enrolled.token)
