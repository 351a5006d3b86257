"""The api Lambda, the HTTP API and CloudFront in front of both."""

from __future__ import annotations

import pytest

from infra.settings import LAMBDA_PYTHON_VERSION

pytestmark = pytest.mark.infra

ALL_VIEWER_EXCEPT_HOST = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
REQUIRED_ENV = (
    "TERRACE_TABLE",
    "TERRACE_BLOB_BUCKET",
    "TERRACE_PUBLIC_URL",
    "TERRACE_SCALER_FUNCTION",
    "TERRACE_URL_SIGNING_SECRET_ARN",
    "TERRACE_BOOTSTRAP_SECRET_ARN",
)
CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"


def test_api_function_is_arm64_python_with_the_layer_and_powertools(synth):
    _, fn = synth.by_path("/Api/Handler/Resource")
    props = fn["Properties"]
    assert props["Architectures"] == ["arm64"]
    assert props["Runtime"] == f"python{LAMBDA_PYTHON_VERSION}"
    assert props["Handler"] == "handler.lambda_handler"
    assert props["TracingConfig"] == {"Mode": "PassThrough"}  # X-Ray is an option (terrace:tracing)
    assert props["Environment"]["Variables"]["POWERTOOLS_TRACE_DISABLED"] == "true"
    layer_id, _ = synth.by_path("/TerraceLayer/Resource")
    assert props["Layers"] == [{"Ref": layer_id}]
    variables = props["Environment"]["Variables"]
    assert variables["POWERTOOLS_SERVICE_NAME"] == "terrace-api"
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "Terrace"
    for name in REQUIRED_ENV:
        assert name in variables, name


def test_the_api_function_never_holds_a_log_read_waiting(synth):
    """A held read bills the Lambda for the wait (and re-read the log every 0.1 s): it answers with what there is."""
    _, fn = synth.by_path("/Api/Handler/Resource")
    assert fn["Properties"]["Environment"]["Variables"]["TERRACE_LOG_READ_WAIT_S"] == "0"


def test_layer_is_for_arm64_and_the_same_runtime(synth):
    _, layer = synth.by_path("/TerraceLayer/Resource")
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    assert layer["Properties"]["CompatibleRuntimes"] == [f"python{LAMBDA_PYTHON_VERSION}"]


def test_http_api_routes_everything_to_the_lambda_with_throttling_and_access_logs(synth):
    assert len(synth.resources("AWS::ApiGatewayV2::Api")) == 1
    [integration_id] = synth.resources("AWS::ApiGatewayV2::Integration")
    routes = {
        r["Properties"]["RouteKey"]: r["Properties"] for r in synth.resources("AWS::ApiGatewayV2::Route").values()
    }
    assert "$default" in routes  # every route goes to the one function
    assert {r["Target"]["Fn::Join"][1][1]["Ref"] for r in routes.values()} == {integration_id}
    integration = next(iter(synth.resources("AWS::ApiGatewayV2::Integration").values()))
    assert integration["Properties"]["IntegrationType"] == "AWS_PROXY"
    assert integration["Properties"]["PayloadFormatVersion"] == "2.0"
    stage = next(iter(synth.resources("AWS::ApiGatewayV2::Stage").values()))["Properties"]
    assert stage["StageName"] == "$default"
    assert stage["DefaultRouteSettings"]["ThrottlingRateLimit"] > 0
    assert stage["DefaultRouteSettings"]["ThrottlingBurstLimit"] > 0
    assert "$context.requestId" in stage["AccessLogSettings"]["Format"]


def test_runners_and_the_ui_have_throttling_budgets_of_their_own(synth, synth_variants):
    """One shared limit let one noisy client starve the others (a script's burst refused the runners' heartbeats):
    the runner and agent protocols and the web UI each have their own routes and limits; terraform/tofu and API
    clients keep the stage's default."""
    routes = {r["Properties"]["RouteKey"] for r in synth.resources("AWS::ApiGatewayV2::Route").values()}
    budgets = {"ANY /api/runner/{proxy+}", "ANY /api/agent/{proxy+}", "ANY /app", "ANY /app/{proxy+}"}
    assert routes == {"$default", *budgets}
    [(stage_id, stage)] = synth.resources("AWS::ApiGatewayV2::Stage").items()
    settings = stage["Properties"]["RouteSettings"]
    assert set(settings) == budgets
    assert settings["ANY /api/runner/{proxy+}"] == {"ThrottlingRateLimit": 50, "ThrottlingBurstLimit": 100}
    assert settings["ANY /app/{proxy+}"] == {"ThrottlingRateLimit": 20, "ThrottlingBurstLimit": 40}
    assert stage["Properties"]["DefaultRouteSettings"] == {"ThrottlingBurstLimit": 100, "ThrottlingRateLimit": 50}
    route_ids = {
        k for k, r in synth.resources("AWS::ApiGatewayV2::Route").items() if r["Properties"]["RouteKey"] in budgets
    }
    assert route_ids <= set(stage["DependsOn"])  # a stage's settings may only name routes that exist
    tuned = synth_variants  # terrace:runnerRateLimit=200, terrace:uiBurstLimit=9
    [tuned_stage] = tuned.resources("AWS::ApiGatewayV2::Stage").values()
    assert tuned_stage["Properties"]["RouteSettings"]["ANY /api/agent/{proxy+}"]["ThrottlingRateLimit"] == 200
    assert tuned_stage["Properties"]["RouteSettings"]["ANY /app"]["ThrottlingBurstLimit"] == 9


def test_public_url_is_the_cloudfront_hostname(synth):
    _, fn = synth.by_path("/Api/Handler/Resource")
    dist_id = next(iter(synth.resources("AWS::CloudFront::Distribution")))
    assert fn["Properties"]["Environment"]["Variables"]["TERRACE_PUBLIC_URL"] == {
        "Fn::Join": ["", ["https://", {"Fn::GetAtt": [dist_id, "DomainName"]}]]
    }


def test_cloudfront_static_from_s3_with_oac_and_the_rest_uncached_to_the_api(synth):
    dist = next(iter(synth.resources("AWS::CloudFront::Distribution").values()))["Properties"]["DistributionConfig"]
    default = dist["DefaultCacheBehavior"]
    assert default["ViewerProtocolPolicy"] == "https-only"
    assert default["CachePolicyId"] == CACHING_DISABLED
    assert default["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST  # Authorization, query strings, cookies
    assert set(default["AllowedMethods"]) == {"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"}
    [static] = dist["CacheBehaviors"]
    assert static["PathPattern"] == "/static/*"
    assert static["ViewerProtocolPolicy"] == "https-only"
    origins = {o["Id"]: o for o in dist["Origins"]}
    assert origins[static["TargetOriginId"]]["OriginAccessControlId"]
    api_origin = origins[default["TargetOriginId"]]
    assert api_origin["CustomOriginConfig"]["OriginProtocolPolicy"] == "https-only"
    assert api_origin["CustomOriginConfig"]["OriginSSLProtocols"] == ["TLSv1.2"]
    assert dist["Logging"]["Fn::If"][1]["Bucket"]  # where CloudFront delivers standard logs (below)
    assert len(synth.resources("AWS::CloudFront::OriginAccessControl")) == 1


def test_assets_bucket_policy_lets_only_this_distribution_read(synth):
    assets_id, _ = synth.by_path("/Data/AssetsBucket/Resource")
    policy = next(
        p for p in synth.resources("AWS::S3::BucketPolicy").values() if p["Properties"]["Bucket"]["Ref"] == assets_id
    )
    reads = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    assert reads and all(s["Principal"] == {"Service": "cloudfront.amazonaws.com"} for s in reads)
    assert all("AWS:SourceArn" in s["Condition"]["StringEquals"] for s in reads)


def test_custom_domain_uses_the_certificate_and_a_modern_tls_policy(synth_options):
    dist = next(iter(synth_options.resources("AWS::CloudFront::Distribution").values()))
    config = dist["Properties"]["DistributionConfig"]
    assert config["Aliases"] == ["terrace.example.com"]
    assert config["ViewerCertificate"]["AcmCertificateArn"].endswith("certificate/abc")
    assert config["ViewerCertificate"]["MinimumProtocolVersion"] == "TLSv1.2_2021"
    _, fn = synth_options.by_path("/Api/Handler/Resource")
    assert fn["Properties"]["Environment"]["Variables"]["TERRACE_PUBLIC_URL"] == "https://terrace.example.com"


def test_static_files_are_deployed_to_the_assets_bucket_under_static(synth):
    """CloudFront's /static/* reads `static/<name>` from the assets bucket; the CDK app uploads the UI's files there."""
    from terrace.web.static_files import static_files

    from infra.web import STAGED

    assets_id, _ = synth.by_path("/Data/AssetsBucket/Resource")
    [deployment] = synth.resources("Custom::CDKBucketDeployment").values()
    props = deployment["Properties"]
    assert props["DestinationBucketName"] == {"Ref": assets_id}
    assert props["DestinationBucketKeyPrefix"] == "static/"
    assert "max-age=300" in str(props["SystemMetadata"])
    assert sorted(p.name for p in STAGED.iterdir()) == sorted(static_files()) and "htmx.min.js" in static_files()
    assert (STAGED / "htmx.min.js").read_bytes() == static_files()["htmx.min.js"].read_bytes()


def _holds(condition, conditions, region):
    """A template condition (Fn::Equals/Or/Not, Condition) evaluated for a stack in `region`."""
    if "Condition" in condition:
        return _holds(conditions[condition["Condition"]], conditions, region)
    if "Fn::Not" in condition:
        return not _holds(condition["Fn::Not"][0], conditions, region)
    if "Fn::Or" in condition:
        return any(_holds(c, conditions, region) for c in condition["Fn::Or"])
    left, right = condition["Fn::Equals"]
    return (region if left == {"Ref": "AWS::Region"} else left) == right


@pytest.mark.parametrize(
    ("region", "logged"),
    [("us-east-1", True), ("eu-west-1", True), ("eu-south-1", False), ("me-south-1", False), ("af-south-1", False)],
)
def test_cloudfront_standard_logs_only_where_cloudfront_delivers_them(synth, region, logged):
    """CloudFront delivers no standard logs to a bucket in an opt-in Region: there the distribution has none (its
    deploy would fail otherwise); everywhere else they go to the access-log bucket."""
    _, distribution = synth.by_path("/Web/Distribution/Resource")
    bucket_id, _ = synth.by_path("/Data/AccessLogsBucket/Resource")
    condition, delivered, absent = distribution["Properties"]["DistributionConfig"]["Logging"]["Fn::If"]
    assert absent == {"Ref": "AWS::NoValue"}
    assert delivered == {"Bucket": {"Fn::GetAtt": [bucket_id, "RegionalDomainName"]}, "Prefix": "cloudfront/"}
    conditions = synth.template["Conditions"]
    assert _holds(conditions[condition], conditions, region) is logged
