"""Where runner tasks run: a VPC (public subnets by default; `terrace:privateSubnets` puts runners in private subnets
behind one NAT gateway), an ECS cluster with no service, and the Fargate task definition built from
runner-container/. The scaler starts tasks with ecs:RunTask (also when a configuration version is created, before its
run exists); idle tasks exit, except the warm ones (`terrace:warmRunners`, default 0, for each organization that had
work within a day; `terrace:warmWindowMinutes`, default 15: one runner of plans, on Spot, for that long after an
organization's activity, which exits by itself). The cluster has the FARGATE and FARGATE_SPOT capacity providers:
speculative plans run on Spot (`terrace:speculativeOnSpot`, default true; the scaler falls back to FARGATE when Spot
has no capacity). On stack deletion a custom resource stops the cluster's tasks first (functions/bootstrap), so `cdk
destroy` does not fail on a cluster with running tasks.

Job output goes to Terrace's log API only (TERRACE_RUNNER_ECHO_OUTPUT=false): the runners' one log group holds the
runner's own lines (job ids, errors), never an organization's output."""

from __future__ import annotations

from aws_cdk import Aws, Duration, IgnoreMode, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.bundling import REPO
from infra.service_roles import ecs_service_linked_role
from infra.settings import DeploySettings

CONTAINER_NAME = "runner"
RUNNER_POLL_INTERVAL_S = 2
# The image is built from the repository root (it pip-installs the terrace package); only these are sent.
IMAGE_CONTEXT = ["*", "!pyproject.toml", "!layers", "!layers/**", "!runner-container", "!runner-container/**",
                 "**/__pycache__", "**/*.pyc", "**/*.egg-info"]  # fmt: skip
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
# SIGTERM to SIGKILL: Fargate's maximum, a Spot interruption's two minutes (a runner finishes its job meanwhile; a
# Spot runner hands its plan back at once)
STOP_TIMEOUT_S = 120
# `docker build --output` for zstd layers (terrace:runnerImageZstd): Fargate extracts zstd faster than gzip
ZSTD_OUTPUT = "type=image,oci-mediatypes=true,compression=zstd,compression-level=3,force-compression=true"


def baked_tool_catalog() -> str:
    """`opentofu=<v>,terraform=<v>` from the Dockerfile's pinned versions: the API lists what the image holds."""
    args = dict(
        line.removeprefix("ARG ").split("=", 1)
        for line in (REPO / "runner-container" / "Dockerfile").read_text().splitlines()
        if line.startswith("ARG ") and "=" in line
    )
    return f"terraform={args['TERRAFORM_VERSION']},opentofu={args['TOFU_VERSION']}"


class Runner(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploySettings,
        api_url: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.settings = settings
        self.private = settings.private_subnets
        # Runners reach the CloudFront URL, provider registries and ECR over the internet: private subnets need
        # a NAT gateway (one, in one AZ: ~$33 a month + $0.045/GB; docs/aws/runners.md, "Private subnets").
        subnet_type = ec2.SubnetType.PRIVATE_WITH_EGRESS if self.private else ec2.SubnetType.PUBLIC
        subnets = [ec2.SubnetConfiguration(name="runners", subnet_type=subnet_type, cidr_mask=22)]
        if self.private:
            subnets.insert(0, ec2.SubnetConfiguration(name="nat", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=26))
        self.flow_logs = logs.LogGroup(self, "FlowLogs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY)
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            nat_gateways=1 if self.private else 0,
            subnet_configuration=subnets,
            gateway_endpoints={  # presigned URLs (configurations, plans) and image layers
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3),
            },
            flow_logs={
                "Rejected": ec2.FlowLogOptions(
                    traffic_type=ec2.FlowLogTrafficType.REJECT,
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(self.flow_logs),
                )
            },
        )
        self.security_group = ec2.SecurityGroup(
            self,
            "RunnerSecurityGroup",
            vpc=self.vpc,
            description="Terrace runners: outbound only (the API, AWS APIs, provider registries)",
            allow_all_outbound=True,
        )
        self.subnets = self.vpc.select_subnets(subnet_type=subnet_type)

        self.cluster = ecs.Cluster(self, "Cluster", vpc=self.vpc, enable_fargate_capacity_providers=True)
        self.cluster.node.add_dependency(ecs_service_linked_role(self))  # a first cluster of the account needs it
        self.log_group = logs.LogGroup(self, "Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY)

        self.task_role = iam.Role(
            self,
            "TaskRole",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            # sts:GetCallerIdentity needs no permission: a task signs one with this role to prove to the API that it
            # is the task its enrollment was bound to (domain/runner_identity.py); the API sends it to STS
            description="Terrace runner: no permission at all (its identity enrolls it; then its own token)",
        )
        # the STS endpoint the API checks runner proofs with, and the runners sign theirs for
        self.sts_endpoint = f"https://sts.{Aws.REGION}.{Aws.URL_SUFFIX}/"

        self.task_definition = ecs.FargateTaskDefinition(
            self,
            "TaskDefinition",
            cpu=settings.runner_cpu,
            memory_limit_mib=settings.runner_memory_mib,
            runtime_platform=ecs.RuntimePlatform(
                cpu_architecture=ecs.CpuArchitecture.ARM64,
                operating_system_family=ecs.OperatingSystemFamily.LINUX,
            ),
            task_role=self.task_role,
        )
        self.container = self.task_definition.add_container(
            CONTAINER_NAME,
            container_name=CONTAINER_NAME,
            image=ecs.ContainerImage.from_asset(
                str(REPO),
                file="runner-container/Dockerfile",
                platform=ecr_assets.Platform.LINUX_ARM64,
                exclude=IMAGE_CONTEXT,
                ignore_mode=IgnoreMode.DOCKER,
                outputs=[ZSTD_OUTPUT] if settings.runner_image_zstd else None,
            ),
            stop_timeout=Duration.seconds(STOP_TIMEOUT_S),
            logging=ecs.LogDrivers.aws_logs(stream_prefix="runner", log_group=self.log_group),
            environment={
                "TERRACE_API_URL": api_url,
                **settings.tool_mirrors(),  # where a version the image lacks is fetched from
                "TERRACE_RUNNER_IDLE_EXIT_S": str(settings.runner_idle_exit_s),
                "TERRACE_RUNNER_DONE_EXIT_S": str(settings.runner_done_exit_s),  # its run done: no idle tail
                # short polls every 2 s: a Lambda held for a long-poll costs more than the extra requests
                "TERRACE_RUNNER_WAIT_S": "0",
                "TERRACE_RUNNER_POLL_INTERVAL_S": str(RUNNER_POLL_INTERVAL_S),
                "TERRACE_TF_BINARY": "tofu",
                "TERRACE_RUNNER_ECHO_OUTPUT": "false",
                "TERRACE_STS_ENDPOINT": self.sts_endpoint,
            },
            readonly_root_filesystem=False,
        )

    def environment(self) -> dict[str, str]:
        """What the scaler needs to start a task (Settings.from_env reads these)."""
        return {
            "TERRACE_ECS_CLUSTER": self.cluster.cluster_name,
            "TERRACE_RUNNER_TASK_DEFINITION": self.task_definition.task_definition_arn,
            "TERRACE_RUNNER_CONTAINER": CONTAINER_NAME,
            "TERRACE_RUNNER_TASK_ROLE_ARN": self.task_role.role_arn,
            "TERRACE_STS_ENDPOINT": self.sts_endpoint,
            "TERRACE_TOOL_CATALOG": baked_tool_catalog(),
            # a version the image lacks: fetched from the mirror once per deployment, then from the bucket (arm64)
            "TERRACE_TOOL_BLOB_CACHE": "arm64",
            **self.settings.tool_mirrors(),  # the catalog's URLs (the API) and its daily sync (tools_sync)
            "TERRACE_DEFAULT_TOOL": "opentofu",
            "TERRACE_RUNNER_SUBNETS": ",".join(s.subnet_id for s in self.subnets.subnets),
            "TERRACE_RUNNER_SECURITY_GROUPS": self.security_group.security_group_id,
            "TERRACE_RUNNER_PUBLIC_IP": "false" if self.private else "true",
            "TERRACE_MAX_RUNNERS_PER_ORGANIZATION": str(self.settings.max_runners_per_organization),
            # warm runners poll every RUNNER_POLL_INTERVAL_S and never idle out (cost: bench.cost prices them)
            "TERRACE_WARM_RUNNERS": str(self.settings.warm_runners),
            # a runner of plans kept W minutes after an organization's activity, on Spot (services/runs/warm_window.py)
            "TERRACE_WARM_WINDOW_MINUTES": str(self.settings.warm_window_minutes),
            "TERRACE_RUNNER_SPOT_LANES": "speculative" if self.settings.speculative_on_spot else "",
        }

    def grant_run_task(self, grantee: iam.IGrantable) -> None:
        """ecs:RunTask on this task definition in this cluster (tagging the task with its organization), listing,
        describing and stopping its tasks, and handing its two roles to ECS tasks only."""
        stack = Stack.of(self)
        tasks = stack.format_arn(service="ecs", resource="task", resource_name=f"{self.cluster.cluster_name}/*")
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["ecs:RunTask"],
            resource_arns=[self.task_definition.task_definition_arn],
            conditions={"ArnEquals": {"ecs:cluster": self.cluster.cluster_arn}},
        )
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["ecs:TagResource"],
            resource_arns=[tasks],
            conditions={"StringEquals": {"ecs:CreateAction": "RunTask"}},
        )
        self.grant_stop_tasks(grantee)
        roles = [self.task_role.role_arn, self.task_definition.obtain_execution_role().role_arn]
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["iam:PassRole"],
            resource_arns=roles,
            conditions={"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}},
        )

    def grant_stop_tasks(self, grantee: iam.IGrantable) -> None:
        """List, describe and stop the cluster's tasks (the scaler; the teardown custom resource)."""
        # ListTasks has no resource-level permission (AWS requires "*"); the condition pins the cluster.
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["ecs:ListTasks"],
            resource_arns=["*"],
            conditions={"ArnEquals": {"ecs:cluster": self.cluster.cluster_arn}},
        )
        tasks = Stack.of(self).format_arn(
            service="ecs", resource="task", resource_name=f"{self.cluster.cluster_name}/*"
        )
        iam.Grant.add_to_principal(
            grantee=grantee, actions=["ecs:DescribeTasks", "ecs:StopTask"], resource_arns=[tasks]
        )
