"""Runner tasks: VPC without NAT, Fargate arm64 task definition, a task role without any permission (runners
ask the API for jobs with a token of their organization that the scaler passes per task)."""

from __future__ import annotations

import pytest

from infra import runner
from infra.runner import CONTAINER_NAME

pytestmark = pytest.mark.infra


def _env(container: dict) -> dict:
    return {e["Name"]: e["Value"] for e in container["Environment"]}


def test_task_definition_is_fargate_arm64_from_the_runner_image(synth):
    [task] = synth.resources("AWS::ECS::TaskDefinition").values()
    props = task["Properties"]
    assert props["RequiresCompatibilities"] == ["FARGATE"]
    assert props["RuntimePlatform"] == {"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"}
    assert (props["Cpu"], props["Memory"]) == ("512", "2048")  # terrace:runnerCpu, terrace:runnerMemoryMiB
    [container] = props["ContainerDefinitions"]
    assert container["Name"] == CONTAINER_NAME
    assert container["LogConfiguration"]["LogDriver"] == "awslogs"
    env = _env(container)
    assert env["TERRACE_TF_BINARY"] == "tofu"
    assert env["TERRACE_RUNNER_IDLE_EXIT_S"] == "10"  # holding a plan's folder for its apply
    assert env["TERRACE_RUNNER_DONE_EXIT_S"] == "0"  # its run done: it exits at its first empty answer
    assert env["TERRACE_RUNNER_ECHO_OUTPUT"] == "false"  # job output reaches Terrace's log API only
    assert (env["TERRACE_RUNNER_WAIT_S"], env["TERRACE_RUNNER_POLL_INTERVAL_S"]) == ("0", "2")  # no Lambda held
    assert not {k for k in env if k.startswith(("TERRACE_QUEUE_URL_", "TERRACE_RUNNER_SECRET", "TERRACE_TABLE"))}
    assert "TERRACE_API_URL" in env and "TERRACE_RUNNER_TOKEN" not in env  # the scaler passes a token per task


def test_runner_image_is_staged_from_the_dockerfile_with_only_what_it_needs(synth):
    assets = [p for p in synth.outdir.iterdir() if p.is_dir() and (p / "runner-container" / "Dockerfile").exists()]
    assert len(assets) == 1
    staged = {p.name for p in assets[0].iterdir()}
    assert staged == {"runner-container", "layers", "pyproject.toml"}


def test_dockerfile_pins_and_verifies_opentofu_and_can_sandbox_each_job():
    from infra.bundling import REPO

    text = (REPO / "runner-container" / "Dockerfile").read_text()
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in text
    assert "ARG TOFU_VERSION=1." in text
    assert "sha256sum -c" in text and "ARG TOFU_SHA256=" in text
    assert "linux_arm64" in text
    # the runner must be root in the container to run each child as a job uid of its own (runner/sandbox.py),
    # with setpriv (util-linux) and kill (procps) installed; a USER line would give children the runner's uid
    assert not [line for line in text.splitlines() if line.startswith("USER ")]
    assert "procps" in text and "util-linux" in text
    # iptables in the final image: job uids kept from link-local addresses where the container has NET_ADMIN
    assert "iptables" in _final_stage(text).split("apt-get install", 1)[1].split("\n")[0]
    assert 'ENTRYPOINT ["python", "-m", "terrace.runner"]' in text


def test_task_role_holds_nothing_of_terrace(synth):
    role_id, _ = synth.by_path("/Runner/TaskRole/Resource")
    policies = [p for p in synth.resources("AWS::IAM::Policy").values() if {"Ref": role_id} in p["Properties"]["Roles"]]
    assert policies == []
    _, role = synth.by_path("/Runner/TaskRole/Resource")
    assert not role["Properties"].get("ManagedPolicyArns") and not role["Properties"].get("Policies")


def test_scaler_may_tag_the_tasks_it_starts(synth):
    _, scaler = synth.by_path("/Functions/Scaler/Resource")
    role_id = scaler["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = [
        s
        for p in synth.resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    tagging = [s for s in statements if s["Action"] == "ecs:TagResource"]
    assert tagging and tagging[0]["Condition"] == {"StringEquals": {"ecs:CreateAction": "RunTask"}}


def test_vpc_has_public_subnets_with_gateway_endpoints_and_no_nat(synth):
    assert not synth.resources("AWS::EC2::NatGateway")
    subnets = synth.resources("AWS::EC2::Subnet").values()
    assert subnets and all(s["Properties"]["MapPublicIpOnLaunch"] is True for s in subnets)
    endpoints = synth.resources("AWS::EC2::VPCEndpoint").values()
    kinds = {e["Properties"]["VpcEndpointType"] for e in endpoints}
    assert kinds == {"Gateway"}
    services = {str(e["Properties"]["ServiceName"]) for e in endpoints}
    assert any(".s3" in s for s in services) and not any(".dynamodb" in s for s in services)


def test_scaler_starts_public_ip_tasks_in_those_subnets(synth):
    _, scaler = synth.by_path("/Functions/Scaler/Resource")
    env = scaler["Properties"]["Environment"]["Variables"]
    assert env["TERRACE_RUNNER_PUBLIC_IP"] == "true"
    assert env["TERRACE_RUNNER_CONTAINER"] == CONTAINER_NAME
    assert env["TERRACE_MAX_RUNNERS"] == "4"
    for name in ("TERRACE_ECS_CLUSTER", "TERRACE_RUNNER_TASK_DEFINITION", "TERRACE_RUNNER_SUBNETS",
                 "TERRACE_RUNNER_SECURITY_GROUPS"):  # fmt: skip
        assert env[name]


def test_runner_security_group_has_no_ingress(synth, synth_options):
    for s in (synth, synth_options):
        _, sg = s.by_path("/Runner/RunnerSecurityGroup/Resource")
        assert not sg["Properties"].get("SecurityGroupIngress")
    assert not synth.resources("AWS::EC2::SecurityGroupIngress")
    assert not synth_options.resources("AWS::EC2::SecurityGroupIngress")


def test_private_option_puts_runners_behind_one_nat_gateway(synth_options):
    """Runners in isolated subnets could not reach the CloudFront URL they are given (nor provider registries):
    the private option routes them through one NAT gateway in a small public subnet."""
    [nat] = synth_options.resources("AWS::EC2::NatGateway").values()
    subnets = synth_options.resources("AWS::EC2::Subnet")
    runner_subnets = {k for k, s in subnets.items() if "/runnersSubnet" in s["Metadata"]["aws:cdk:path"]}
    assert len(runner_subnets) == 2
    assert all(subnets[k]["Properties"]["MapPublicIpOnLaunch"] is False for k in runner_subnets)
    nat_subnet = nat["Properties"]["SubnetId"]["Ref"]
    assert nat_subnet not in runner_subnets and subnets[nat_subnet]["Properties"]["MapPublicIpOnLaunch"] is True
    routes = [r["Properties"] for r in synth_options.resources("AWS::EC2::Route").values()]
    assert sum(1 for r in routes if r.get("NatGatewayId") and r["DestinationCidrBlock"] == "0.0.0.0/0") == 2
    kinds = [e["Properties"]["VpcEndpointType"] for e in synth_options.resources("AWS::EC2::VPCEndpoint").values()]
    assert kinds == ["Gateway"]  # S3 (free; keeps presigned URL traffic off the NAT)
    _, scaler = synth_options.by_path("/Functions/Scaler/Resource")
    env = scaler["Properties"]["Environment"]["Variables"]
    assert env["TERRACE_RUNNER_PUBLIC_IP"] == "false"
    assert env["TERRACE_MAX_RUNNERS"] == "7"


def test_image_bakes_a_tool_catalog_and_the_api_lists_exactly_its_versions(synth):
    from infra.bundling import REPO

    text = (REPO / "runner-container" / "Dockerfile").read_text()
    assert "ARG TERRAFORM_VERSION=1." in text and "ARG TERRAFORM_SHA256=" in text
    assert text.count("sha256sum -c") == 2  # both downloads are checked
    assert "/opt/terrace/tools/tofu/${TOFU_VERSION}" in text
    assert "/opt/terrace/tools/terraform/${TERRAFORM_VERSION}" in text
    assert "TERRACE_TOOLS_DIR=/opt/terrace/tools" in text
    versions = dict(
        line.removeprefix("ARG ").split("=", 1) for line in text.splitlines() if line.startswith("ARG ") and "=" in line
    )
    _, api = synth.by_path("/Api/Handler/Resource")
    env = api["Properties"]["Environment"]["Variables"]
    assert env["TERRACE_TOOL_CATALOG"] == (
        f"terraform={versions['TERRAFORM_VERSION']},opentofu={versions['TOFU_VERSION']}"
    )
    assert env["TERRACE_DEFAULT_TOOL"] == "opentofu"
    assert env["TERRACE_TOOL_BLOB_CACHE"] == "arm64"  # the runners' architecture (the task definition's)


def _final_stage(text: str) -> str:
    return text[text.rindex("\nFROM ") :]


def test_the_final_image_has_no_build_tools_and_bakes_the_tools_in():
    """Multi-stage: curl, the downloaded archives and pip's installers stay in the build stages; the final stage
    copies the verified binaries and the runner's virtual environment (a job downloads no tool)."""
    from infra.bundling import REPO

    text = (REPO / "runner-container" / "Dockerfile").read_text()
    assert text.count("\nFROM ") == 3
    final = _final_stage(text)
    assert final.startswith("\nFROM ${PYTHON_IMAGE}\n")
    for absent in ("curl", "unzip", "pip install", "build-essential", "gcc", ".tar.gz", ".zip"):
        assert absent not in final, absent
    assert "COPY --from=tools /opt/terrace/tools /opt/terrace/tools" in final
    assert "COPY --from=python /opt/terrace/venv /opt/terrace/venv" in final
    assert "--no-deps ." in text and "pip uninstall -y" in text  # no server libraries, no pip in the image


RUNNER_LIBRARIES = ("httpx", "pydantic", "pydantic-settings", "typer", "tenacity")  # what terrace.runner imports itself
SERVER_LIBRARIES = ("boto3", "botocore", "fastapi", "starlette", "mangum", "aws_lambda_powertools", "jinja2", "jwt",
                    "uvicorn", "httptools", "uvloop", "trustme", "cryptography", "moto", "click")  # fmt: skip


def _normalized(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def _image_requirements() -> dict[str, str]:
    from infra.bundling import REPO

    lines = (REPO / "runner-container" / "requirements.txt").read_text().splitlines()
    pins = [line.split("==") for line in lines if line.strip() and not line.startswith("#")]
    return {_normalized(name): version for name, version in pins}


def _closure(roots: tuple[str, ...]) -> dict[str, str]:
    """The installed distributions `roots` need (markers evaluated here: Linux, CPython 3.11), at their versions."""
    from importlib import metadata

    from packaging.requirements import Requirement

    found: dict[str, str] = {}
    todo = list(roots)
    while todo:
        name = _normalized(todo.pop())
        if name not in found:
            dist = metadata.distribution(name)
            found[name] = dist.version
            for line in dist.requires or []:
                requirement = Requirement(line)
                if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                    todo.append(requirement.name)
    return found


def test_the_runner_image_installs_its_libraries_and_their_dependencies_pinned():
    """requirements.txt is exactly the closure of the runner's libraries, at server-container/constraints.txt's
    versions (the ones the tests run on); the Dockerfile installs it beside the package, installed without its
    dependencies."""
    from infra.bundling import REPO

    constraints = dict(
        line.split("==")
        for line in (REPO / "server-container" / "constraints.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )
    pins = _image_requirements()
    assert pins == {name: constraints[name] for name in _closure(RUNNER_LIBRARIES)}
    assert not {_normalized(name) for name in SERVER_LIBRARIES} & set(pins)
    text = (REPO / "runner-container" / "Dockerfile").read_text()
    assert "COPY pyproject.toml runner-container/requirements.txt ./" in text
    assert "--no-deps ." in text and "-r requirements.txt" in text


def test_the_runner_imports_only_what_the_runner_image_installs(tmp_path):
    """The image installs the package without its dependencies plus requirements.txt: importing the runner must need
    no other installed library (boto3, FastAPI, cryptography or any other of the API's, nor any test tool)."""
    import subprocess
    import sys
    from importlib import metadata

    image = set(_image_requirements())
    blocked = sorted(
        module
        for module, dists in metadata.packages_distributions().items()
        if not module.startswith("_") and not {_normalized(d) for d in dists} & (image | {"terrace"})
    )
    assert set(SERVER_LIBRARIES) <= set(blocked)
    script = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None  # an import of it raises ImportError\n"
        "import terrace.runner.main, terrace.runner.execution, terrace.runner.sandbox, terrace.runner.catalog\n"
        "from terrace.runner.main import main\n"
        "assert main(['--help']) == 0 and main(['--bogus']) == 2  # typer renders help and usage errors\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr


def test_warm_runners_and_the_per_organization_maximum_are_deploy_options(synth, synth_options):
    """Off by default (runners start on demand, overlapping the upload); `terrace:warmRunners` keeps that many
    alive for each organization that had work within a day."""
    for stack, per_org, warm in ((synth, "0", "0"), (synth_options, "3", "1")):
        _, scaler = stack.by_path("/Functions/Scaler/Resource")
        env = scaler["Properties"]["Environment"]["Variables"]
        assert env["TERRACE_MAX_RUNNERS_PER_ORGANIZATION"] == per_org
        assert env["TERRACE_WARM_RUNNERS"] == warm


def test_the_warm_window_is_on_by_default_and_reaches_the_api_and_the_scaler(synth, synth_options):
    """`terrace:warmWindowMinutes` (15; 0 turns it off): the API signals a workspace opened, the scaler keeps a
    runner that long."""
    for stack, minutes in ((synth, "15"), (synth_options, "0")):
        for path in ("/Functions/Scaler/Resource", "/Api/Handler/Resource"):
            _, function = stack.by_path(path)
            assert function["Properties"]["Environment"]["Variables"]["TERRACE_WARM_WINDOW_MINUTES"] == minutes


def test_speculative_plans_run_on_fargate_spot_with_two_minutes_to_stop(synth, synth_options):
    """The cluster has both Fargate capacity providers; the scaler is told to start speculative runners on Spot
    (`terrace:speculativeOnSpot=false` turns it off); a task gets Fargate's longest stop timeout, a Spot
    interruption's two minutes."""
    (associations,) = synth.resources("AWS::ECS::ClusterCapacityProviderAssociations").values()
    assert set(associations["Properties"]["CapacityProviders"]) == {"FARGATE", "FARGATE_SPOT"}
    for stack, lanes in ((synth, "speculative"), (synth_options, "")):
        _, scaler = stack.by_path("/Functions/Scaler/Resource")
        assert scaler["Properties"]["Environment"]["Variables"]["TERRACE_RUNNER_SPOT_LANES"] == lanes
    (task,) = synth.resources("AWS::ECS::TaskDefinition").values()
    (container,) = task["Properties"]["ContainerDefinitions"]
    assert container["StopTimeout"] == 120


def test_the_runner_image_can_be_pushed_with_zstd_layers(synth, synth_options):
    """`terrace:runnerImageZstd=true`: the image asset is built with `--output` for zstd-compressed OCI layers
    (Fargate extracts them faster than gzip); off by default (it needs docker's containerd image store)."""
    import json as json_module

    def outputs(stack) -> list:  # type: ignore[no-untyped-def]
        (manifest,) = stack.outdir.glob("*.assets.json")
        images = json_module.loads(manifest.read_text()).get("dockerImages", {})
        return [image["source"].get("dockerOutputs", []) for image in images.values()]

    assert outputs(synth) == [[]]
    (zstd,) = outputs(synth_options)
    assert zstd == [runner.ZSTD_OUTPUT] and "compression=zstd" in zstd[0] and "oci-mediatypes=true" in zstd[0]


def test_the_api_checks_runner_proofs_against_the_runner_task_role_and_sts(synth):
    """The api knows the runner task role (a task's GetCallerIdentity must be its session) and the STS endpoint it
    sends proofs to; the task definition signs for the same endpoint (domain/runner_identity.py)."""
    role_id, _ = synth.by_path("/Runner/TaskRole/Resource")
    _, api = synth.by_path("/Api/Handler/Resource")
    env = api["Properties"]["Environment"]["Variables"]
    assert env["TERRACE_RUNNER_TASK_ROLE_ARN"] == {"Fn::GetAtt": [role_id, "Arn"]}
    [task] = synth.resources("AWS::ECS::TaskDefinition").values()
    runner_env = {e["Name"]: e["Value"] for e in task["Properties"]["ContainerDefinitions"][0]["Environment"]}
    assert runner_env["TERRACE_STS_ENDPOINT"] == env["TERRACE_STS_ENDPOINT"]
    assert "sts." in str(env["TERRACE_STS_ENDPOINT"])


MIRRORS = {
    "TERRACE_TOOL_MIRROR_TERRAFORM": "https://mirror.internal/hashicorp",
    "TERRACE_TOOL_MIRROR_OPENTOFU": "https://mirror.internal/opentofu",
}


def test_an_air_gapped_deployment_names_its_release_mirrors_once_for_the_api_the_sync_and_the_runners(
    synth, synth_variants
):
    """`terrace:toolMirrorTerraform` / `terrace:toolMirrorOpentofu`: the catalog's URLs (the API), its daily sync
    (tools_sync) and the runners' fetches all use the deployment's own mirror; unset, none is named (the vendors'
    public release sites, the settings' defaults)."""
    for made, expected in ((synth_variants, MIRRORS), (synth, {})):
        _, api = made.by_path("/Api/Handler/Resource")
        _, sync = made.by_path("/Functions/ToolsSync/Resource")
        [task] = made.resources("AWS::ECS::TaskDefinition").values()
        for env in (
            api["Properties"]["Environment"]["Variables"],
            sync["Properties"]["Environment"]["Variables"],
            _env(task["Properties"]["ContainerDefinitions"][0]),
        ):
            assert {k: v for k, v in env.items() if k.startswith("TERRACE_TOOL_MIRROR_")} == expected


def test_a_release_mirror_must_be_https():
    from infra.settings import DeploySettings

    class Scope:
        class node:  # noqa: N801  (the construct's node)
            @staticmethod
            def try_get_context(key: str) -> str | None:
                return "http://mirror.internal/hashicorp" if key == "terrace:toolMirrorTerraform" else None

    with pytest.raises(ValueError, match="toolMirrorTerraform must be an https:// URL"):
        DeploySettings.from_context(Scope())  # type: ignore[arg-type]
