"""The logs function (functions/logs/handler.py) and its URL: where the CLI's log reads go on AWS.

A log-read URL is a capability (its phase, expiry and HMAC signature in the path), so serving it needs neither
CloudFront's origin check nor the HTTP API: the function's own URL (auth NONE; Lambda charges its requests and
duration only) answers it, and the api function mints log-read URLs on that origin (`TERRACE_LOG_READ_URL`). The
function checks the signature itself before it reads anything and answers only that one path.

Its role reads and writes nothing else: the table's items (the run, the live chunks, the workspace's sensitive
values to mask them again), the log archives (`logs/*`), the URL-signing key and the data key (or the KMS key that
opens sensitive values and the bucket's objects). No queue, no write, no other object. It answers at once with what
there is (`TERRACE_LOG_READ_WAIT_S=0`): the CLI polls again."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.data import Data
from infra.lambdas import terrace_function
from infra.secrets import Secrets
from infra.settings import DeploySettings

# what a log read needs of the functions' shared environment (the rest names queues, the cluster, other functions)
ENVIRONMENT = (
    "TERRACE_TABLE",
    "TERRACE_BLOB_BUCKET",
    "TERRACE_KMS_KEY_ID",
    "TERRACE_URL_SIGNING_SECRET_ARN",
    "TERRACE_DATA_KEY_ARN",
)
ARCHIVES = "logs/*"  # services/runs/store_logs.py: archive_key


class LogReads(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        layer: lambda_.ILayerVersion,
        environment: dict[str, str],
        data: Data,
        secrets: Secrets,
        settings: DeploySettings,
    ) -> None:
        super().__init__(scope, construct_id)
        self.function = terrace_function(
            self,
            "Handler",
            folder="logs",
            layer=layer,
            environment={
                **{k: v for k, v in environment.items() if k in ENVIRONMENT},
                "TERRACE_LOG_READ_WAIT_S": "0",  # never held waiting: the CLI polls again
            },
            timeout=Duration.seconds(10),
            memory_mb=1024,  # as the api function: the same read, the same cold start
            tracing=settings.tracing,
        )
        self.function_url = self.function.add_function_url(
            auth_type=lambda_.FunctionUrlAuthType.NONE, invoke_mode=lambda_.InvokeMode.BUFFERED
        )
        data.table.grant_read_data(self.function)
        grant_archives(data.blobs, self.function)
        secrets.grant_read(self.function, "signing-key", "data-key")
        if data.key is not None:
            data.key.grant_decrypt(self.function)
        elif settings.legacy_kms_key_arn:
            self.function.add_to_role_policy(
                iam.PolicyStatement(actions=["kms:Decrypt"], resources=[settings.legacy_kms_key_arn])
            )

    @property
    def url(self) -> str:
        """The origin of log-read URLs (`https://<id>.lambda-url.<region>.on.aws/`)."""
        return self.function_url.url


def grant_archives(bucket: s3.IBucket, grantee: iam.IGrantable) -> None:
    iam.Grant.add_to_principal(
        grantee=grantee, actions=["s3:GetObject"], resource_arns=[bucket.arn_for_objects(ARCHIVES)]
    )
