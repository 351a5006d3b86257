"""No-code provisioning with a real terraform on Terrace's runner: a private module designated no-code, a workspace
provisioned from it through the API (`POST /no-code-modules/:id/workspaces`, no configuration from the caller),
whose generated root module the runner's `terraform init` resolves from the private registry with the run's own
token; the auto-applied run's outputs are the module's, with the variables given."""

from __future__ import annotations

from typing import Any

import pytest
from e2e_runs import RUN_TIMEOUT_S, wait_final, wait_for
from test_module_registry import _publish

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def test_a_provisioned_workspace_applies_the_pinned_module_with_its_variables(run_stack, run_api, unique):
    org, name = run_stack.organization, unique("nocode")
    body = {"data": {"type": "registry-modules", "attributes": {"name": name, "provider": "greeter"}}}
    module = run_api.request("POST", f"/api/v2/organizations/{org}/registry-modules", body, expect=201).json()["data"]
    _publish(run_api, org, name, "1.0.0")
    _publish(run_api, org, name, "1.1.0")
    designation = {"data": {"type": "no-code-modules", "attributes": {"version-pin": "1.0.0"}, "relationships": {
        "registry-module": {"data": {"type": "registry-modules", "id": module["id"]}}}}}  # fmt: skip
    ncm = run_api.request("POST", f"/api/v2/organizations/{org}/no-code-modules", designation, expect=201).json()
    variables = [{"type": "vars", "attributes": {"key": "name", "value": "no-code", "category": "terraform"}}]
    body = {"data": {"type": "workspaces", "attributes": {
        "name": unique("provisioned"), "auto-apply": True, "execution-mode": "remote", "terraform-version": "1.0.3"},
        "relationships": {"vars": {"data": variables}}}}  # fmt: skip
    ws = run_api.request("POST", f"/api/v2/no-code-modules/{ncm['data']['id']}/workspaces", body, expect=200).json()
    ws_id = ws["data"]["id"]

    def first_run() -> dict[str, Any] | None:
        runs = run_api.request("GET", f"/api/v2/workspaces/{ws_id}/runs").json()["data"]
        return runs[0] if runs else None

    run = wait_for(first_run, 30, what="the provisioning run")
    final = wait_final(run_api, run["id"], timeout=RUN_TIMEOUT_S)
    assert final["attributes"]["status"] == "applied", final
    outputs = run_api.request("GET", f"/api/v2/workspaces/{ws_id}/current-state-version?include=outputs").json()
    values = {o["attributes"]["name"]: o["attributes"]["value"] for o in outputs.get("included", [])}
    assert values == {"greeting": "hello no-code from 1.0.0"}  # the pinned version, not the newest
