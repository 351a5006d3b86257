"""What bench/cost.py knows about prices: the list prices, what one run does, and every CloudFormation resource type
the stack may contain, priced or free (with why). tests/infra/test_cdk_cost.py fails when a template holds a type
that is in neither list, so a new billable resource cannot slip into the stack unpriced."""

from __future__ import annotations

from dataclasses import dataclass

# us-east-1 on-demand list prices in USD, as published on the AWS pricing pages (recorded 2025-06, the latest
# the authors could read; this machine is offline). Update PRICES_AS_OF with the numbers.
PRICES_AS_OF = "2025-06"
PRICES = {
    "lambda_arm_gb_s": 0.0000133334,
    "lambda_request": 0.20 / 1e6,
    "fargate_arm_vcpu_h": 0.03238,
    "fargate_arm_gb_h": 0.00356,
    # Fargate Spot: AWS prices it "up to 70%" below Fargate and moves the price with supply; assumed 70% here
    "fargate_spot_discount": 0.70,
    "public_ipv4_h": 0.005,  # also an Elastic IP (the NAT gateway's)
    "interface_endpoint_az_h": 0.01,
    "nat_gateway_h": 0.045,
    "nat_gateway_gb": 0.045,
    "ddb_write_request_unit": 0.625 / 1e6,
    "ddb_read_request_unit": 0.125 / 1e6,
    "s3_put": 0.005 / 1000,
    "s3_get": 0.0004 / 1000,
    "sqs_request": 0.40 / 1e6,
    "http_api_request": 1.00 / 1e6,
    "cloudfront_https_request": 0.01 / 10000,
    "logs_ingest_gb": 0.50,
    "alarm_month": 0.10,
    "dashboard_month": 3.00,
    "custom_metric_month": 0.30,  # prorated by the hours a metric is published in
    "kms_key_month": 1.00,
    "kms_rotation_month": 1.00,  # each of a key's first two rotations adds a version billed $1 a month
    "secret_month": 0.40,
    "ecr_gb_month": 0.10,
    "xray_trace": 5.00 / 1e6,
}
MONTH_MINUTES = 30 * 24 * 60
MONTH_HOURS = 30 * 24


@dataclass(frozen=True)
class RunProfile:
    """What one run does (a plan and an apply). Counts measured with `python -m bench.run_requests` (terraform 1.11,
    `terraform apply -auto-approve`, runners set as on AWS); durations are the design's round numbers. Printed by
    the bench."""

    phases: int = 2  # a plan and its apply
    # a task's billed start: Fargate bills from the image pull (bench.first_run: 3.2-8.6 s for the 129 MB image,
    # cited throughput) to the runner's first request (1.7 s measured here)
    task_start_s: float = 10.0
    phase_seconds: int = 50  # Fargate time of one phase's work: init, plan or apply, uploads
    # of which `terraform init` (providers downloaded and unpacked): an apply in its plan's folder skips it
    init_seconds: float = 2.0
    # runs whose apply is confirmed after the plan's runner idled out (a person, later): that apply has a task (start,
    # init, tail) of its own. An auto-applied plan hands its apply to its runner in the finish answer, and the CLI's
    # `terraform apply` confirms within the runner's brisk polls: one task, the apply in the plan's folder (measured)
    late_apply_share: float = 0.0
    client_requests: int = 22  # the CLI's requests but its log reads: upload, run creation, status polls (measured)
    backend_requests: int = 24  # the job's terraform through its backend: discovery, workspace, state, lock (measured)
    runner_phase_requests: int = 5  # a plan's finish and its two upload URLs, the apply's start and finish (measured)
    log_stream_s: float = 30.0  # per phase: how long the phase streams output (terraform's own time in the phase)
    # a CLI log read per this many seconds of streaming (go-tfe reads again at once after bytes, else after 0.5-2 s):
    # measured 0.63-0.76 a second against the runner's 2 s flushes (0.79-0.87 against the 1 s flushes before)
    log_poll_s: float = 1.3
    log_kb_per_phase: float = 20.0  # the job output of a phase
    whole_log_reads: bool = False  # True: as before incremental log reads (each read read the whole log again)
    runner_poll_s: float = 2.0  # an idle runner asks /jobs/next this often (short polls: no Lambda held waiting)
    api_ms: int = 60  # average api Lambda duration per request
    ddb_reads_per_request: float = 2.0
    ddb_writes_per_request: float = 0.6
    s3_puts: int = 6  # configuration, state, plan, plan JSON, two log archives
    s3_gets: int = 6
    events_sqs_requests_per_run: int = 4  # status-change and state events (the lanes' requests follow the template)
    scaler_invocations: int = 2  # on enqueue
    events_invocations: int = 2
    background_ms: int = 200  # a scaler, reaper or events invocation
    runner_log_kb_per_phase: int = 5  # the runner's own lines (job output goes to Terrace's log API, not here)
    lambda_log_kb_per_request: float = 1.0
    runner_download_mb_per_phase: int = 100  # providers and modules (through the NAT gateway when private)
    flow_log_kb_per_phase: int = 10  # rejected packets only
    ecr_image_gb: float = 0.3


# The run profiles the bench prices (`python -m bench.cost --profile NAME`; the table shows the first, a line the
# others). "terrace": the project's own run (null and random providers, a plan and an auto-approved apply of a few
# resources). "aws-provider": a small run with the AWS provider (its ~100 MB arm64 zip downloaded and unpacked by
# `terraform init`, a refresh and a few API calls): longer phases, more output. Each phase's work is the total it
# had when a phase was priced as a task of its own, less the task's start.
PROFILES = {
    "terrace": RunProfile(),
    "aws-provider": RunProfile(
        phase_seconds=80,
        # the ~130 MB zip: 3.3-8.7 s to download at the image pull's cited throughput, ~10 s to unpack and hash at
        # half a vCPU (measured here: 7 CPU-s to unzip and hash a 175 MB zip of a 512 MB Go binary; docs/aws/cost.md)
        init_seconds=13.0,
        log_stream_s=50,
        log_kb_per_phase=60,
        runner_download_mb_per_phase=130,
        s3_gets=8,
    ),
}


@dataclass(frozen=True)
class IdleProfile:
    """What a deployment does with nobody using it."""

    tick_ddb_reads: float = 3.0  # a scheduled invocation's table reads
    tick_log_kb: float = 1.0
    active_organizations: int = 1  # organizations with work every day (each keeps terrace:warmRunners runners)
    event_source_long_polls_per_minute: float = 15.0  # Lambda's SQS pollers: 5 long polls of 20 s


# Every resource type the stack may contain that bench/cost.py prices (one line or more each).
PRICED = {
    "AWS::KMS::Key": "$1 a month, +$1 for each of the first two yearly rotations",
    "AWS::SecretsManager::Secret": "$0.40 a month each",
    "AWS::CloudWatch::Alarm": "$0.10 a month each",
    "AWS::CloudWatch::Dashboard": "$3 a month each (an account's first 3 are free)",
    "AWS::EC2::VPCEndpoint": "interface endpoints by the AZ-hour (gateway endpoints are free)",
    "AWS::EC2::NatGateway": "by the hour and the GB",
    "AWS::EC2::EIP": "a public IPv4 address by the hour",
    "AWS::EC2::Subnet": "public subnets: each runner task's public IPv4 by the hour",
    "AWS::EC2::FlowLog": "CloudWatch Logs ingestion of rejected packets",
    "AWS::ECS::TaskDefinition": "Fargate by the second; the image in ECR by the GB-month",
    "AWS::Events::Rule": "each scheduled invocation (Lambda, X-Ray when traced, table reads, logs)",
    "AWS::Lambda::EventSourceMapping": "SQS long polls all month",
    "AWS::Lambda::Function": "requests, GB-seconds, X-Ray traces when active, custom metrics, logs",
    "AWS::Lambda::Url": "nothing of its own: its function's requests and GB-seconds (the CLI's log reads)",
    "AWS::ApiGatewayV2::Api": "per request",
    "AWS::CloudFront::Distribution": "per request (standard logs to S3: storage only)",
    "AWS::DynamoDB::GlobalTable": "per request unit (storage and PITR are storage)",
    "AWS::S3::Bucket": "per request (storage is storage)",
    "AWS::SQS::Queue": "per request",
}
# Every other resource type the stack may contain, and why it costs nothing at rest or per run.
FREE = {
    "AWS::ApiGatewayV2::Integration": "configuration",
    "AWS::ApiGatewayV2::Route": "configuration",
    "AWS::ApiGatewayV2::Stage": "configuration (its access logs are priced as Logs ingestion per request)",
    "AWS::CloudFront::OriginAccessControl": "configuration",
    "AWS::CloudFront::ResponseHeadersPolicy": "configuration",
    "AWS::Cognito::UserPool": "the first 10,000 monthly active users are free (option)",
    "AWS::Cognito::UserPoolClient": "configuration",
    "AWS::Cognito::UserPoolDomain": "configuration",
    "AWS::EC2::InternetGateway": "free (data transfer out is priced with the NAT gateway or not at all)",
    "AWS::EC2::Route": "configuration",
    "AWS::EC2::RouteTable": "configuration",
    "AWS::EC2::SecurityGroup": "configuration",
    "AWS::EC2::SecurityGroupIngress": "configuration",
    "AWS::EC2::SubnetRouteTableAssociation": "configuration",
    "AWS::EC2::VPC": "free",
    "AWS::EC2::VPCGatewayAttachment": "configuration",
    "AWS::ECS::Cluster": "free without Container Insights",
    "AWS::ECS::ClusterCapacityProviderAssociations": "configuration",
    "AWS::IAM::Policy": "free",
    "AWS::IAM::Role": "free",
    "AWS::Lambda::LayerVersion": "free (its storage counts against a free 75 GB)",
    "AWS::Lambda::Permission": "configuration",
    "AWS::Logs::LogGroup": "storage only ($0.03/GB-month, retention-bounded); ingestion priced per source",
    "AWS::Logs::QueryDefinition": "free",
    "AWS::S3::BucketPolicy": "configuration",
    "AWS::SNS::Subscription": "the first 1,000 e-mail notifications a month are free (alarm option)",
    "AWS::SNS::Topic": "free at rest",
    "AWS::SNS::TopicPolicy": "configuration",
    "AWS::SQS::QueuePolicy": "configuration",
    "AWS::CDK::Metadata": "CDK's record of the construct library versions (`cdk synth` adds it): no AWS resource",
    "Custom::CDKBucketDeployment": "runs at deploy time only",
    "Custom::DescribeCognitoUserPoolClient": "runs at deploy time only (Cognito option)",
    "Custom::EcsServiceLinkedRole": "runs at deploy time only",
    "Custom::TerraceBootstrapAdmin": "runs at deploy time only",
    "Custom::TerraceOriginVerify": "runs at deploy time only",
    "Custom::TerraceRunnerTasks": "runs at stack deletion only",
    "Custom::VpcRestrictDefaultSG": "runs at deploy time only",
}
