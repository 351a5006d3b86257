"""terraform 1.16's policy summary: after a plan its `cloud` block reads the run again with
`include=tf_policy_evaluations` (`internal/cloud/backend_tfPolicyEvaluation.go`), keeps the evaluations of the
`Init` and `Plan` stages, and lists each one's `tf-policy-evaluations/:id/tf-policy-set-outcomes` page by page
(go-tfe v1.110's `TFPolicyEvaluationOutcomes.List`). These tests replay those calls against a run whose OPA policy
evaluation ran, and read the answers as go-tfe decodes them: the run's relationship names the included
evaluations, and each policy outcome carries `policy_name`, `status`, `enforcement_level`."""

from __future__ import annotations

from typing import Any

from policy_helpers import call, create_policy, create_set, plan_run
from run_helpers import RunEnv, make_run_env
from terrace.domain.principal import PrincipalKind

CLOUD = {"X-Terraform-Integration": "cloud"}


def _cli_read(env: RunEnv, run_id: str) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The run as the CLI reads it: the evaluations its relationship names, resolved from `included`."""
    answer = env.client.get(
        f"/api/v2/runs/{run_id}", params={"include": "tf_policy_evaluations"}, headers={**env.headers, **CLOUD}
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    included = {(d["type"], d["id"]): d for d in body.get("included", [])}
    refs = body["data"]["relationships"]["tf-policy-evaluations"]["data"]
    return [included[(r["type"], r["id"])] for r in refs], included


def _outcomes(env: RunEnv, evaluation_id: str, **params: str) -> list[dict[str, Any]]:
    """Every page of an evaluation's outcomes, as the CLI follows them."""
    found: list[dict[str, Any]] = []
    page = 1
    while True:
        query = {"page[number]": str(page), "page[size]": "1", **params}
        answer = env.client.get(
            f"/api/v2/tf-policy-evaluations/{evaluation_id}/tf-policy-set-outcomes",
            params=query,
            headers={**env.headers, **CLOUD},
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        found.extend(body["data"])
        pagination = body["meta"]["pagination"]
        if pagination["current-page"] >= pagination["total-pages"]:
            return found
        page = pagination["next-page"]


def test_a_plan_s_opa_results_are_its_plan_stage_tf_policy_evaluation() -> None:
    env = make_run_env()
    create_set(env, "guard", policies=(create_policy(env, "no_null"),), workspaces=(env.workspace_id,))
    create_set(env, "advice", policies=(create_policy(env, "tips", "advisory"),), workspaces=(env.workspace_id,))
    run = plan_run(env, "null_resource")
    [evaluation], _ = _cli_read(env, run["id"])
    attrs = evaluation["attributes"]
    assert evaluation["type"] == "tf-policy-evaluations"
    assert (attrs["status"], attrs["stage-type"]) == ("failed", "Plan")
    assert attrs["result-count"] == {
        "advisory-failed": 1, "mandatory-failed": 1, "passed": 0, "errored": 0, "unknown": 0}  # fmt: skip
    assert evaluation["relationships"]["run"]["data"] == {"type": "runs", "id": run["id"]}
    sets = _outcomes(env, evaluation["id"])
    assert sorted(s["attributes"]["policy-set-name"] for s in sets) == ["advice", "guard"]
    by_name = {s["attributes"]["policy-set-name"]: s for s in sets}
    [guard] = by_name["guard"]["attributes"]["outcomes"]
    assert (guard["policy_name"], guard["status"], guard["enforcement_level"]) == ("no_null", "failed", "mandatory")
    assert guard["diagnostics"][0]["summary"] == "null_resource.r0 is a null_resource (workspace app)"
    [tip] = by_name["advice"]["attributes"]["outcomes"]
    assert (tip["status"], tip["enforcement_level"]) == ("failed", "advisory")  # the CLI prints it as Advisory
    assert by_name["guard"]["attributes"]["error"] is None
    assert by_name["guard"]["relationships"]["tf-policy-evaluation"]["data"]["id"] == evaluation["id"]
    failed = _outcomes(env, evaluation["id"], **{"filter[enforcement-level]": "mandatory"})
    kept = {s["attributes"]["policy-set-name"]: len(s["attributes"]["outcomes"]) for s in failed}
    assert kept == {"guard": 1, "advice": 0}
    read = env.api("GET", f"/tf-policy-evaluations/{evaluation['id']}").json()["data"]
    assert read["attributes"]["stage-type"] == "Plan"


def test_a_passing_plan_and_a_run_without_policies() -> None:
    env = make_run_env()
    create_set(env, "guard", policies=(create_policy(env, "no_null"),), workspaces=(env.workspace_id,))
    run = plan_run(env, "aws_s3_bucket")
    [evaluation], _ = _cli_read(env, run["id"])
    assert evaluation["attributes"]["status"] == "passed"
    [outcome] = _outcomes(env, evaluation["id"])
    assert [p["status"] for p in outcome["attributes"]["outcomes"]] == ["passed"]
    # without the include the run names no evaluation, and reads none
    plain = env.api("GET", f"/runs/{run['id']}").json()
    assert "tf-policy-evaluations" not in plain["data"]["relationships"] and "included" not in plain
    listed = env.client.get(
        "/api/v2/workspaces/" + env.workspace_id + "/runs", params={"include": "tf_policy_evaluations"},
        headers=env.headers).json()  # fmt: skip
    assert listed["data"][0]["relationships"]["tf-policy-evaluations"]["data"] == [
        {"type": "tf-policy-evaluations", "id": evaluation["id"]}
    ]


def test_a_run_without_a_policy_set_has_no_tf_policy_evaluation() -> None:
    env = make_run_env()
    run = plan_run(env, "null_resource")
    evaluations, included = _cli_read(env, run["id"])
    assert evaluations == [] and not [k for k in included if k[0] == "tf-policy-evaluations"]


def test_tf_policy_results_are_hidden_from_strangers() -> None:
    env = make_run_env()
    create_set(env, "guard", policies=(create_policy(env, "no_null"),), workspaces=(env.workspace_id,))
    run = plan_run(env, "null_resource")
    [evaluation], _ = _cli_read(env, run["id"])
    stranger = env.container.accounts.create_user("stranger", "s@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, stranger.id).secret
    for path in (f"/tf-policy-evaluations/{evaluation['id']}/tf-policy-set-outcomes",
                 f"/tf-policy-evaluations/{evaluation['id']}", f"/runs/{run['id']}?include=tf_policy_evaluations",
                 "/tf-policy-evaluations/poleval-nosuchthing12/tf-policy-set-outcomes"):  # fmt: skip
        answer = call(env, token, "GET", path)
        assert answer.status_code == 404 and answer.json()["errors"], path
