"""CloudFront in front of everything: /static/* from the assets bucket (origin access control), the rest
to the HTTP API uncached with Authorization and query strings forwarded. HTTPS only.

The web UI's static files (terrace.web.static_files: the project's CSS and htmx from node_modules) are
staged into a folder at synth time and uploaded to the assets bucket under static/ by a BucketDeployment
(a plain zip asset: no Docker), which also invalidates /static/* on CloudFront."""

from __future__ import annotations

import shutil
from pathlib import Path

from aws_cdk import Aws, CfnCondition, Duration, Fn, RemovalPolicy
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct
from terrace.web.static_files import static_files

from infra.origin_verify import HEADER
from infra.settings import DeploySettings

STAGED = Path(__file__).resolve().parents[1] / ".build" / "static-assets"


def stage_static_files(folder: Path = STAGED) -> Path:
    """Copy the UI's static files into `folder` (emptied first); fails loudly when one is missing."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, source in static_files().items():
        if not source.is_file():
            raise FileNotFoundError(f"{source} is missing: run `make install` (npm ci installs htmx)")
        shutil.copyfile(source, folder / name)
    return folder


class Web(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploySettings,
        api_endpoint: str,
        assets: s3.IBucket,
        log_bucket: s3.IBucket,
        origin_verify: str,
    ) -> None:
        super().__init__(scope, construct_id)
        api_domain = Fn.select(2, Fn.split("/", api_endpoint))  # https://<id>.execute-api.<region>.amazonaws.com
        api_origin = origins.HttpOrigin(
            api_domain,
            protocol_policy=cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
            origin_ssl_protocols=[cloudfront.OriginSslPolicy.TLS_V1_2],
            custom_headers={HEADER: origin_verify},
        )
        self.headers = security_headers(self)
        certificate = (
            acm.Certificate.from_certificate_arn(self, "Certificate", settings.certificate_arn)
            if settings.certificate_arn
            else None
        )
        self.distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment="Terrace",
            default_behavior=cloudfront.BehaviorOptions(
                origin=api_origin,
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
                allowed_methods=cloudfront.AllowedMethods.ALLOW_ALL,
                cache_policy=cloudfront.CachePolicy.CACHING_DISABLED,
                # Every viewer header (Authorization included), cookie and query string; Host is
                # API Gateway's own, so the public URL comes from TERRACE_PUBLIC_URL instead.
                origin_request_policy=cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
                response_headers_policy=self.headers,
                compress=False,
            ),
            additional_behaviors={
                "/static/*": cloudfront.BehaviorOptions(
                    origin=origins.S3BucketOrigin.with_origin_access_control(assets),
                    viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
                    cache_policy=cloudfront.CachePolicy.CACHING_OPTIMIZED,
                    response_headers_policy=self.headers,
                    compress=True,
                )
            },
            domain_names=[settings.domain_name] if settings.domain_name else None,
            certificate=certificate,
            minimum_protocol_version=cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021 if certificate else None,
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            price_class=cloudfront.PriceClass.PRICE_CLASS_100,
            enable_logging=True,
            log_bucket=log_bucket,
            log_file_prefix="cloudfront/",
        )
        standard_logs_where_delivered(self, self.distribution, log_bucket)
        self.static = s3deploy.BucketDeployment(
            self,
            "StaticFiles",
            sources=[s3deploy.Source.asset(str(stage_static_files()))],
            destination_bucket=assets,
            destination_key_prefix="static/",
            cache_control=[s3deploy.CacheControl.from_string("public, max-age=300")],  # no invalidation needed
            memory_limit=256,
            log_group=logs.LogGroup(
                self, "StaticFilesLogs", retention=logs.RetentionDays.ONE_WEEK, removal_policy=RemovalPolicy.DESTROY
            ),
        )
        self.hostname = settings.domain_name or self.distribution.distribution_domain_name
        self.url = f"https://{self.hostname}"


# CloudFront delivers no standard logs to a bucket in these Regions (the opt-in ones; CloudFront Developer Guide,
# "Choosing an Amazon S3 bucket for your standard logs"): a distribution that names one there fails to deploy.
NO_STANDARD_LOGS_REGIONS = (
    "af-south-1", "ap-east-1", "ap-east-2", "ap-south-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5",
    "ap-southeast-7", "ca-west-1", "eu-central-2", "eu-south-1", "eu-south-2", "il-central-1", "me-central-1",
    "me-south-1", "mx-central-1",
)  # fmt: skip


def standard_logs_where_delivered(scope: Construct, distribution: cloudfront.Distribution, bucket: s3.IBucket) -> None:
    """The distribution's standard logs go to the stack's access-log bucket, except in a Region where CloudFront
    delivers none (the stack deploys there without them; the API's own access logs still go to CloudWatch)."""
    regions = [Fn.condition_equals(Aws.REGION, region) for region in NO_STANDARD_LOGS_REGIONS]
    groups = [Fn.condition_or(*regions[i : i + 10]) for i in range(0, len(regions), 10)]  # at most 10 per Fn::Or
    delivered = CfnCondition(scope, "StandardLogsDelivered", expression=Fn.condition_not(Fn.condition_or(*groups)))
    logging = {"Bucket": bucket.bucket_regional_domain_name, "Prefix": "cloudfront/"}
    cfn = distribution.node.default_child
    assert isinstance(cfn, cloudfront.CfnDistribution)
    cfn.add_property_override(
        "DistributionConfig.Logging", Fn.condition_if(delivered.logical_id, logging, Aws.NO_VALUE)
    )


def security_headers(scope: Construct) -> cloudfront.ResponseHeadersPolicy:
    """HSTS (two years, subdomains), nosniff, no framing by other sites (X-Frame-Options and CSP
    frame-ancestors; a CSP the application sends itself is kept), and a strict referrer policy."""
    return cloudfront.ResponseHeadersPolicy(
        scope,
        "SecurityHeaders",
        comment="Terrace: security headers",
        security_headers_behavior=cloudfront.ResponseSecurityHeadersBehavior(
            strict_transport_security=cloudfront.ResponseHeadersStrictTransportSecurity(
                access_control_max_age=Duration.days(730), include_subdomains=True, override=True
            ),
            content_type_options=cloudfront.ResponseHeadersContentTypeOptions(override=True),
            frame_options=cloudfront.ResponseHeadersFrameOptions(
                frame_option=cloudfront.HeadersFrameOption.DENY, override=True
            ),
            content_security_policy=cloudfront.ResponseHeadersContentSecurityPolicy(
                content_security_policy="frame-ancestors 'none'", override=False
            ),
            referrer_policy=cloudfront.ResponseHeadersReferrerPolicy(
                referrer_policy=cloudfront.HeadersReferrerPolicy.STRICT_ORIGIN_WHEN_CROSS_ORIGIN, override=False
            ),
        ),
    )
