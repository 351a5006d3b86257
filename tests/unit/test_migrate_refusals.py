"""`terrace migrate` goes on past one object the other side will not take or give: a policy whose text the target
refuses (Rego its OPA does not compile), a module version whose archive is not an HTTP download (a go-getter
address). Each is recorded as a failure in the report; the objects after it still move."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import httpx
from terrace.migrate import modules, policies
from terrace.migrate.client import Api
from terrace.migrate.engine import Migration, Options
from terrace.migrate.report import Report

Handler = Callable[[httpx.Request], httpx.Response]


def page(items: list[dict[str, Any]]) -> httpx.Response:
    return httpx.Response(200, json={"data": items, "meta": {"pagination": {"next-page": None}}})


def server(routes: dict[tuple[str, str], Any], seen: list[str]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        answer = routes.get((request.method, request.url.path))
        if answer is None:
            return httpx.Response(404, json={"errors": [{"status": "404", "title": "not found"}]})
        return answer(request) if callable(answer) else answer

    return httpx.MockTransport(handle)


def migration(source: dict[tuple[str, str], Any], target: dict[tuple[str, str], Any]) -> tuple[Migration, list[str]]:
    seen: list[str] = []
    apis = [Api(side, "https://x.example", "t", transport=server(routes, seen)) for side, routes in
            (("source", source), ("target", target))]  # fmt: skip
    report = Report("https://x.example", "https://x.example", "acme", dry_run=False, out=io.StringIO())
    return Migration(apis[0], apis[1], Options("acme"), report), seen


def policy(pid: str, name: str) -> dict[str, Any]:
    attrs = {"name": name, "kind": "opa", "enforcement-level": "advisory", "query": "data.x.deny", "description": ""}
    return {
        "id": pid,
        "type": "policies",
        "attributes": attrs,
        "links": {"download": f"/api/v2/policies/{pid}/download"},
    }


def test_a_policy_text_the_target_refuses_is_a_failure_and_the_next_policy_moves() -> None:
    org = "/api/v2/organizations/acme"
    source = {
        ("GET", f"{org}/policies"): page([policy("pol-a", "old"), policy("pol-b", "new")]),
        ("GET", "/api/v2/policies/pol-a/download"): httpx.Response(200, content=b"package x\ndeny[msg] { true }\n"),
        ("GET", "/api/v2/policies/pol-b/download"): httpx.Response(200, content=b"package x\n"),
        ("GET", f"{org}/policy-sets"): page([]),
    }
    created = iter(["pol-1", "pol-2"])

    def create(request: httpx.Request) -> httpx.Response:
        attrs = json.loads(request.content)["data"]["attributes"]
        return httpx.Response(201, json={"data": {"id": next(created), "type": "policies", "attributes": attrs}})

    refused = {"errors": [{"status": "422", "detail": "the policy does not compile: rego_parse_error"}]}
    target = {
        ("GET", f"{org}/policies"): page([]),
        ("POST", f"{org}/policies"): create,
        ("PUT", "/api/v2/policies/pol-1/upload"): httpx.Response(422, json=refused),
        ("PUT", "/api/v2/policies/pol-2/upload"): httpx.Response(200),
        ("GET", f"{org}/policy-sets"): page([]),
    }
    m, seen = migration(source, target)

    policies.run(m)

    texts = {a["name"]: (a["action"], a.get("detail", "")) for a in m.report.actions if a["kind"] == "policy text"}
    assert texts["old (opa)"][0] == "fail" and "does not compile" in texts["old (opa)"][1]
    assert texts["new (opa)"][0] == "create"
    assert "PUT /api/v2/policies/pol-2/upload" in seen


def test_a_module_version_at_a_go_getter_address_is_a_failure_and_the_next_version_moves() -> None:
    org = "/api/v2/organizations/acme"
    statuses = [{"version": "1.0.0", "status": "ok"}, {"version": "1.1.0", "status": "ok"}]
    module = {
        "id": "mod-1",
        "type": "registry-modules",
        "attributes": {"name": "vpc", "provider": "aws", "registry-name": "private", "namespace": "acme",
                       "version-statuses": statuses},
    }  # fmt: skip
    base = "/api/registry/v1/modules/acme/vpc/aws"
    source = {
        ("GET", f"{org}/registry-modules"): page([module]),
        ("GET", "/.well-known/terraform.json"): httpx.Response(200, json={"modules.v1": "/api/registry/v1/modules/"}),
        ("GET", f"{base}/1.0.0/download"): httpx.Response(204, headers={"X-Terraform-Get": "git::https://g.example/v"}),
        ("GET", f"{base}/1.1.0/download"): httpx.Response(204, headers={"X-Terraform-Get": "/archives/1.1.0.tgz"}),
        ("GET", "/archives/1.1.0.tgz"): httpx.Response(200, content=b"tarball"),
    }
    target_module = {**module, "attributes": {**module["attributes"], "version-statuses": []}}
    uploaded: list[bytes] = []

    def upload(request: httpx.Request) -> httpx.Response:
        uploaded.append(request.content)
        return httpx.Response(200)

    version = {"data": {"id": "modver-1", "type": "registry-module-versions", "links": {"upload": "/up/1.1.0"}}}
    target = {
        ("GET", f"{org}/registry-modules"): page([target_module]),
        ("POST", f"{org}/registry-modules/private/acme/vpc/aws/versions"): httpx.Response(201, json=version),
        ("PUT", "/up/1.1.0"): upload,
    }
    m, _seen = migration(source, target)

    modules.run(m)

    versions = {a["name"]: a for a in m.report.actions if a["kind"] == "registry module version"}
    assert versions["private/acme/vpc/aws 1.0.0"]["action"] == "fail"
    assert "git::https://g.example/v" in versions["private/acme/vpc/aws 1.0.0"]["detail"]
    assert versions["private/acme/vpc/aws 1.1.0"]["action"] == "create"
    assert uploaded == [b"tarball"]


def test_a_version_left_pending_on_the_target_gets_its_archive_again() -> None:
    """A migration stopped between creating a version on the target and uploading its archive: the re-run reads the
    pending version's upload link instead of creating it again."""
    org = "/api/v2/organizations/acme"
    attrs = {"name": "vpc", "provider": "aws", "registry-name": "private", "namespace": "acme"}
    module = {"id": "mod-1", "type": "registry-modules", "attributes": attrs}
    base = "/api/registry/v1/modules/acme/vpc/aws"
    source = {
        ("GET", f"{org}/registry-modules"): page(
            [{**module, "attributes": {**attrs, "version-statuses": [{"version": "2.0.0", "status": "ok"}]}}]
        ),
        ("GET", f"{base}/2.0.0/download"): httpx.Response(204, headers={"X-Terraform-Get": "/archives/2.0.0.tgz"}),
        ("GET", "/archives/2.0.0.tgz"): httpx.Response(200, content=b"two"),
    }
    uploaded: list[bytes] = []

    def upload(request: httpx.Request) -> httpx.Response:
        uploaded.append(request.content)
        return httpx.Response(200)

    pending = {"data": {"id": "modver-2", "type": "registry-module-versions", "links": {"upload": "/up/2.0.0"}}}
    target = {
        ("GET", f"{org}/registry-modules"): page(
            [{**module, "attributes": {**attrs, "version-statuses": [{"version": "2.0.0", "status": "pending"}]}}]
        ),
        ("GET", f"{org}/registry-modules/private/acme/vpc/aws/version"): httpx.Response(200, json=pending),
        ("PUT", "/up/2.0.0"): upload,
    }
    m, seen = migration(source, target)

    modules.run(m)

    assert not [s for s in seen if s.startswith("POST")]
    assert uploaded == [b"two"]
    assert [(a["name"], a["action"]) for a in m.report.actions if a["kind"] == "registry module version"] == [
        ("private/acme/vpc/aws 2.0.0", "update")
    ]
