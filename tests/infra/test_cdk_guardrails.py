"""What must never be in the template: always-on cost, public data, broad IAM grants, dependency cycles."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.infra

# Actions AWS offers no resource-level permission for: "*" is the only resource they accept.
STAR_RESOURCE_ACTIONS = {
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "ecr:GetAuthorizationToken",
    "ecs:ListTasks",
}


@pytest.fixture(params=["synth", "synth_options"])
def any_synth(request):
    return request.getfixturevalue(request.param)


def _types(synth) -> set[str]:
    return {r["Type"] for r in synth.template["Resources"].values()}


def test_no_nat_gateway_by_default_and_no_load_balancer(any_synth, synth):
    types = _types(any_synth)
    assert "AWS::EC2::NatGateway" not in _types(synth)  # only the private-subnets option pays for one
    assert not {t for t in types if t.startswith("AWS::ElasticLoadBalancing")}


def test_no_always_on_ecs_service(any_synth):
    for service in any_synth.resources("AWS::ECS::Service").values():
        assert service["Properties"].get("DesiredCount", 1) == 0


def test_no_database_or_cache_servers(any_synth):
    types = _types(any_synth)
    assert not {
        t for t in types if t.startswith(("AWS::RDS::", "AWS::ElastiCache::", "AWS::DocDB::", "AWS::Neptune::"))
    }


def test_no_public_bucket(any_synth):
    for bucket in any_synth.resources("AWS::S3::Bucket").values():
        assert bucket["Properties"].get("AccessControl") not in ("PublicRead", "PublicReadWrite")
        assert "WebsiteConfiguration" not in bucket["Properties"]
    for policy in any_synth.resources("AWS::S3::BucketPolicy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Effect"] == "Allow":
                assert statement["Principal"] not in ("*", {"AWS": "*"}), statement


def _listify(value):
    return value if isinstance(value, list) else [value]


def test_no_star_action_and_star_resources_only_where_aws_requires_it(any_synth):
    for logical_id, policy in any_synth.resources("AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = set(_listify(statement["Action"]))
            assert "*" not in actions, logical_id
            assert not any(a.endswith(":*") for a in actions), (logical_id, actions)
            if "*" in _listify(statement.get("Resource", [])):
                assert actions <= STAR_RESOURCE_ACTIONS, (logical_id, actions)


def test_roles_carry_no_inline_admin_or_managed_admin_policies(any_synth):
    for role in any_synth.resources("AWS::IAM::Role").values():
        managed = str(role["Properties"].get("ManagedPolicyArns", ""))
        assert "AdministratorAccess" not in managed and "PowerUserAccess" not in managed
        for policy in role["Properties"].get("Policies", []):
            for statement in policy["PolicyDocument"]["Statement"]:
                assert statement["Action"] != "*"


def _references(value, found: set[str]) -> set[str]:
    if isinstance(value, dict):
        if "Ref" in value and isinstance(value["Ref"], str):
            found.add(value["Ref"])
        if "Fn::GetAtt" in value:
            found.add(value["Fn::GetAtt"][0])
        if "Fn::Sub" in value:
            import re

            text = value["Fn::Sub"] if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"][0]
            found.update(m.split(".")[0] for m in re.findall(r"\$\{([^}]+)\}", text))
        for child in value.values():
            _references(child, found)
    elif isinstance(value, list):
        for child in value:
            _references(child, found)
    return found


def test_resource_dependency_graph_has_no_cycle(any_synth):
    """CloudFormation refuses cyclic templates at deploy time; CDK does not check within one stack."""
    resources = any_synth.template["Resources"]
    graph = {
        name: {
            d
            for d in _references(r.get("Properties", {}), set()) | set(_listify(r.get("DependsOn", [])))
            if d in resources
        }
        for name, r in resources.items()
    }
    visiting, done = set(), set()

    def visit(node: str, path: list[str]) -> None:
        if node in done:
            return
        assert node not in visiting, f"dependency cycle: {' -> '.join([*path, node])}"
        visiting.add(node)
        for dep in graph[node]:
            visit(dep, [*path, node])
        visiting.discard(node)
        done.add(node)

    for name in graph:
        visit(name, [])
