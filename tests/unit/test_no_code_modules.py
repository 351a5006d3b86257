"""No-code modules (go-tfe's `RegistryNoCodeModules`, v1.109's `TestRegistryNoCodeModules*` and
`TestRegistryModulesList` with `include=no-code-modules`): a private module's one designation, its version pin (one
of the module's versions) and variable options, read by members, managed by who manages modules; the module's
`no-code` attribute and `no-code-modules` relationship; it goes with its module."""

from __future__ import annotations

from typing import Any

from policy_helpers import call, member
from run_helpers import RunEnv, make_run_env
from terrace.domain.principal import PrincipalKind

OPTIONS = [
    {"variable-name": "region", "variable-type": "string", "options": ["eu-west-1", "us-east-1"]},
    {"variable-name": "size", "variable-type": "number", "options": ["1", "3"]},
]


def _module(env: RunEnv, name: str, **attrs: Any) -> dict[str, Any]:
    body = {"data": {"type": "registry-modules", "attributes": {"name": name, "provider": "aws", **attrs}}}
    created = env.api("POST", "/organizations/acme/registry-modules", body)
    assert created.status_code == 201, created.text
    return dict(created.json()["data"])


def _no_code(env: RunEnv, module_id: str, options: Any = None, **attrs: Any) -> Any:
    relationships: dict[str, Any] = {"registry-module": {"data": {"type": "registry-modules", "id": module_id}}}
    if options is not None:  # go-tfe sends each option as a relationship member with its attributes
        relationships["variable-options"] = {"data": [{"type": "variable-options", "attributes": o} for o in options]}
    body = {"data": {"type": "no-code-modules", "attributes": attrs, "relationships": relationships}}
    return env.api("POST", "/organizations/acme/no-code-modules", body)


def test_a_no_code_module_is_created_read_changed_and_deleted() -> None:
    env = make_run_env()
    module = _module(env, "vpc")
    version = {"data": {"type": "registry-module-versions", "attributes": {"version": "1.2.3"}}}
    assert env.api("POST", "/registry-modules/acme/vpc/aws/versions", version).status_code == 201
    assert _no_code(env, module["id"], **{"version-pin": "1.2.5"}).status_code == 422  # no such version
    created = _no_code(env, module["id"], OPTIONS, **{"version-pin": "1.2.3"})
    assert created.status_code == 201, created.text
    ncm = created.json()["data"]
    assert ncm["type"] == "no-code-modules" and ncm["id"].startswith("nocode-")
    assert (ncm["attributes"]["enabled"], ncm["attributes"]["version-pin"]) == (True, "1.2.3")
    assert ncm["relationships"]["organization"]["data"]["id"] == "acme"
    assert ncm["relationships"]["registry-module"]["data"]["id"] == module["id"]
    assert len(ncm["relationships"]["variable-options"]["data"]) == 2
    assert _no_code(env, module["id"]).status_code == 409  # one per module

    read = env.api("GET", f"/no-code-modules/{ncm['id']}?include=variable-options").json()
    assert read["data"] == ncm
    assert [(i["attributes"]["variable-name"], i["attributes"]["options"]) for i in read["included"]] == [
        ("region", ["eu-west-1", "us-east-1"]),
        ("size", ["1", "3"]),
    ]
    listed = env.api("GET", "/organizations/acme/registry-modules?include=no-code-modules").json()
    (shown,) = listed["data"]
    assert shown["attributes"]["no-code"] is True
    assert shown["relationships"]["no-code-modules"]["data"] == [{"type": "no-code-modules", "id": ncm["id"]}]
    assert [i["id"] for i in listed["included"]] == [ncm["id"]]

    patch = {"data": {"type": "no-code-modules", "attributes": {"enabled": False}}}
    updated = env.api("PATCH", f"/no-code-modules/{ncm['id']}", patch).json()["data"]
    assert updated["attributes"]["enabled"] is False and updated["attributes"]["version-pin"] == "1.2.3"
    unchanged = env.api("PATCH", f"/no-code-modules/{ncm['id']}", {"data": {"type": "no-code-modules"}})
    assert unchanged.json()["data"] == updated
    assert env.api("GET", f"/registry-modules/{module['id']}").json()["data"]["attributes"]["no-code"] is False
    bad = {"data": {"type": "no-code-modules", "attributes": {"enabled": "yes"}}}
    assert env.api("PATCH", f"/no-code-modules/{ncm['id']}", bad).status_code == 422

    assert env.api("DELETE", f"/no-code-modules/{ncm['id']}").status_code == 204
    assert env.api("GET", f"/no-code-modules/{ncm['id']}").status_code == 404
    assert env.api("GET", "/no-code-modules/non-existing").status_code == 404
    assert _no_code(env, module["id"]).status_code == 201  # designated again


def test_a_module_created_no_code_and_deleted_takes_its_designation() -> None:
    env = make_run_env()
    module = _module(env, "iam", **{"no-code": True})
    assert module["attributes"]["no-code"] is True
    ncm_id = module["relationships"]["no-code-modules"]["data"][0]["id"]
    assert env.api("GET", f"/no-code-modules/{ncm_id}").status_code == 200
    assert env.api("DELETE", "/organizations/acme/registry-modules/private/acme/iam/aws").status_code == 204
    assert env.api("GET", f"/no-code-modules/{ncm_id}").status_code == 404


def test_bad_options_are_422_and_only_module_managers_designate() -> None:
    env = make_run_env()
    module = _module(env, "vpc")
    for bad in ([{"variable-name": "x", "variable-type": "thing", "options": []}],
                [{"variable-name": "x", "variable-type": "string", "options": [1]}],
                [OPTIONS[0], OPTIONS[0]], [None]):  # fmt: skip
        assert _no_code(env, module["id"], bad).status_code == 422, bad
    missing = {"data": {"type": "no-code-modules", "attributes": {}}}
    assert env.api("POST", "/organizations/acme/no-code-modules", missing).status_code == 422
    reader = member(env, "reader")
    body = {"data": {"type": "no-code-modules", "relationships": {
        "registry-module": {"data": {"type": "registry-modules", "id": module["id"]}}}}}  # fmt: skip
    assert call(env, reader, "POST", "/organizations/acme/no-code-modules", body).status_code == 403
    ncm_id = _no_code(env, module["id"]).json()["data"]["id"]
    assert call(env, reader, "GET", f"/no-code-modules/{ncm_id}").status_code == 200
    assert call(env, reader, "DELETE", f"/no-code-modules/{ncm_id}").status_code == 403
    stranger = env.container.accounts.create_user("mallory", "m@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, stranger.id).secret
    assert call(env, token, "GET", f"/no-code-modules/{ncm_id}").status_code == 404
    assert call(env, token, "POST", "/organizations/acme/no-code-modules", body).status_code == 404
