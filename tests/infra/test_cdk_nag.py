"""cdk-nag AwsSolutions runs during synth (as in `cdk synth`): no unacknowledged error, and every
acknowledgment says why."""

from __future__ import annotations

import re

import pytest

from infra import nag

pytestmark = pytest.mark.infra


def _violations(synth) -> list[str]:
    return [
        f"{v['severity']} {v['ruleName']}: {[c['constructPath'] for c in v['violatingConstructs']]}"
        for report in synth.report.get("pluginReports", [])
        for v in report["violations"]
    ]


def test_the_nag_pack_the_app_registers_fails_a_non_compliant_stack(tmp_path):
    """Proves the registration used by infra/app.py is live: a bare queue breaks AwsSolutions-SQS3/SQS4."""
    import aws_cdk as cdk
    from aws_cdk import aws_sqs as sqs

    from infra.app import add_nag

    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Bad")
    sqs.Queue(stack, "Plain")
    add_nag(app)
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    report = (tmp_path / "validation-report.json").read_text()
    assert "AwsSolutions-SQS3" in report and "AwsSolutions-SQS4" in report


@pytest.mark.parametrize("fixture", ["synth", "synth_options"])
def test_no_unacknowledged_errors(request, fixture):
    synth = request.getfixturevalue(fixture)
    errors = [v for v in _violations(synth) if v.startswith("error")]
    assert not errors, "\n".join(errors)
    assert synth.validation_error is None


def _granular(synth) -> dict[str, str]:
    stack = synth.stack
    return nag.granular_findings(
        table=stack.data.table,
        blobs=stack.data.blobs,
        scaler=stack.functions.scaler,
        policy=stack.functions.policy,
        cluster=stack.runner.cluster,
        assets=stack.data.assets,
    )


def test_every_acknowledgment_has_a_reason(synth):
    for rule_id, reason in {**nag.GENERAL, **nag.DEFAULT_DOMAIN, **_granular(synth)}.items():
        assert rule_id.startswith("AwsSolutions-"), rule_id
        assert len(reason.split()) >= 6, f"{rule_id}: reason too thin: {reason!r}"


def test_granular_acknowledgments_name_resources_of_this_template(synth):
    """A granular acknowledgment naming a logical id that is not in the template would accept nothing."""
    for rule_id in _granular(synth):
        for logical_id in re.findall(r"<([A-Za-z0-9]+)(?:\.Arn)?>", rule_id):
            if not logical_id.startswith("AWS"):
                assert logical_id in synth.template["Resources"], rule_id


def test_default_domain_acknowledgment_only_without_a_custom_domain(synth_options):
    """With a custom certificate CloudFront enforces TLSv1.2_2021, so CFR4 must pass on its own."""
    assert synth_options.validation_error is None


def test_the_ecs2_reason_says_what_a_runner_task_really_carries(synth):
    """AwsSolutions-ECS2 (secrets in a task's environment) is accepted because no secret is there: the task
    definition holds URLs and tuning values, the scaler's per-task override (the ECS launcher's) names the runner's
    organization, id and retirement, and the task proves who it is with its task role to enroll."""
    from terrace.adapters.ecs_runner_launcher import EcsLauncher
    from terrace.adapters.runner_launcher import RunnerCredential

    [task] = synth.resources("AWS::ECS::TaskDefinition").values()
    names = {e["Name"] for e in task["Properties"]["ContainerDefinitions"][0]["Environment"]}
    assert not {n for n in names if "TOKEN" in n or "SECRET" in n or "ENROLLMENT" in n}, names
    assert "TERRACE_STS_ENDPOINT" in names  # where the task's identity proof is signed for
    launcher = EcsLauncher(None, "c", "td", [], [], False, "runner")
    args = launcher._run_task_args(RunnerCredential("runner-1", "acme", "at-1", "tre.code", 1234))
    override = {e["name"]: e["value"] for e in args["overrides"]["containerOverrides"][0]["environment"]}
    assert "tre.code" not in str(args) and not {n for n in override if "TOKEN" in n or "ENROLLMENT" in n}, override
    reason = nag.GENERAL["AwsSolutions-ECS2"]
    assert "no token or code" in reason and "GetCallerIdentity" in reason
