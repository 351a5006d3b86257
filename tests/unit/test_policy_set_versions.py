"""Policy set versions: a tarball of `.rego` files and a policies.hcl uploaded through the version's URL and read
when it lands, as HCP reads one; traversal, links out, oversize and bad files leave it `errored` with the reason;
a ready version is what its set's evaluations run."""

from __future__ import annotations

import io
import json
import tarfile
from typing import Any

from policy_helpers import create_set
from run_helpers import RunEnv, make_run_env, tarball
from terrace.services.policies.evaluation_worker import QUEUED, SET_QUEUED
from terrace.services.runs.stage_participants import StageContext

POLICIES_HCL = """
policy "no_null" {
  query             = "data.terraform.policies.no_null.deny"
  enforcement_level = "mandatory"
  description       = "no null resources"
}

policy "few" {
  query             = "data.terraform.policies.few.deny"
  enforcement_level = "advisory"
}
"""
NO_NULL = """package terraform.policies.no_null
import rego.v1
deny contains sprintf("%s is forbidden", [rc.address]) if {
    some rc in input.plan.resource_changes
    rc.type == "null_resource"
}
"""
FEW = """package terraform.policies.few
import rego.v1
deny contains "more than the limit" if count(input.plan.resource_changes) > data.few.max
"""


def _version(env: RunEnv, set_id: str) -> tuple[str, str]:
    created = env.api("POST", f"/policy-sets/{set_id}/versions")
    assert created.status_code == 201, created.text
    doc = created.json()["data"]
    assert doc["attributes"]["status"] == "pending" and doc["attributes"]["source"] == "tfe-api"
    key = doc["links"]["upload"].split("memory://blobs/")[1].split("?")[0]
    return str(doc["id"]), key


def _status(env: RunEnv, version_id: str) -> dict[str, Any]:
    return dict(env.api("GET", f"/policy-set-versions/{version_id}").json()["data"]["attributes"])


def _raw_tar(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
    return buffer.getvalue()


def test_a_version_becomes_current_and_its_policies_are_evaluated() -> None:
    env = make_run_env()
    ps = create_set(env, "bundle", workspaces=(env.workspace_id,))
    version_id, key = _version(env, ps["id"])
    env.land(key, tarball({"policies.hcl": POLICIES_HCL, "no_null/main.rego": NO_NULL, "few/few.rego": FEW,
                           "few/data.json": '{"max": 0}'}))  # fmt: skip
    status = _status(env, version_id)
    assert status["status"] == "ready" and "ready-at" in status["status-timestamps"]
    read = env.api("GET", f"/policy-sets/{ps['id']}?include=current_version,newest_version").json()
    assert read["data"]["relationships"]["current-version"]["data"]["id"] == version_id
    assert [i["id"] for i in read["included"]] == [version_id]
    # few/data.json is data.few (as OPA bundles root data files)
    cv = env.upload_config()
    run = env.container.run_store.load(env.create_run(cv)["id"])
    plan = {"resource_changes": [{"address": "null_resource.a", "type": "null_resource"}]}
    env.blobs.put("plans/v/plan.json", json.dumps(plan).encode())
    context = StageContext(
        run=run, stage_id="ts-version123456789a", stage="post_plan", plan_json_key="plans/v/plan.json"
    )
    [evaluation_id] = env.container.policy_participant.begin(context)
    published: list[dict[str, Any]] = env.container.publisher.events  # type: ignore[attr-defined]
    for kind in (QUEUED, SET_QUEUED):  # the evaluation starts, then one event per policy set
        for event in [e for e in published if e["type"] == kind]:
            env.container.events.handle(event)
    [outcome] = env.api("GET", f"/policy-evaluations/{evaluation_id}/policy-set-outcomes").json()["data"]
    by_name = {o["policy_name"]: o for o in outcome["attributes"]["outcomes"]}
    assert by_name["no_null"]["status"] == "failed" and by_name["no_null"]["description"] == "no null resources"
    assert by_name["no_null"]["output"] == [{"result": ["null_resource.a is forbidden"]}]
    assert (by_name["few"]["status"], by_name["few"]["enforcement_level"]) == ("failed", "advisory")
    assert outcome["attributes"]["result_count"] == {"advisory-failed": 1, "mandatory-failed": 1, "passed": 0,
                                                     "errored": 0}  # fmt: skip
    assert env.container.policy_participant.verdict(context) == "failed"


def test_paths_outside_the_root_links_out_and_bad_files_are_refused() -> None:
    env = make_run_env()
    ps = create_set(env, "bundle")
    outside = tarfile.TarInfo("../escape.rego")
    absolute = tarfile.TarInfo("/etc/evil.rego")
    link = tarfile.TarInfo("link.rego")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    cases = {
        "escape": _raw_tar([(outside, NO_NULL.encode())]),
        "absolute": _raw_tar([(absolute, NO_NULL.encode())]),
        "link": _raw_tar([(link, b"")]),
        "not a tarball": b"this is no gzip",
        "no policies.hcl": tarball({"main.rego": NO_NULL}),
        "bad hcl": tarball({"policies.hcl": 'policy "x" {', "main.rego": NO_NULL}),
        "does not compile": tarball({"policies.hcl": POLICIES_HCL, "main.rego": "package x\ndeny contains if {"}),
        "too many files": tarball({f"f{i}.rego": "package x" for i in range(201)}),
        "a huge file": tarball({"policies.hcl": POLICIES_HCL, "big.rego": "#" * (300 * 1024)}),
    }
    for reason, data in cases.items():
        version_id, key = _version(env, ps["id"])
        env.land(key, data)
        status = _status(env, version_id)
        assert status["status"] == "errored", reason
        assert status["error"] and status["error"] == status["error-message"], reason
    assert "escape.rego" in _status(env, _errored(env, ps["id"], cases["escape"]))["error"]
    assert env.api("GET", f"/policy-sets/{ps['id']}").json()["data"]["relationships"]["current-version"]["data"] is None


def _errored(env: RunEnv, set_id: str, data: bytes) -> str:
    version_id, key = _version(env, set_id)
    env.land(key, data)
    return version_id


def test_a_landed_version_is_read_once_and_sentinel_sets_take_any_tarball() -> None:
    env = make_run_env()
    ps = create_set(env, "sentinel-set", kind="sentinel")
    version_id, key = _version(env, ps["id"])
    env.land(
        key, tarball({"sentinel.hcl": 'policy "a" { enforcement_level = "advisory" }', "a.sentinel": "main = true"})
    )
    assert _status(env, version_id)["status"] == "ready"
    env.land(key, b"replayed garbage")  # a second landing of the same key changes nothing
    assert _status(env, version_id)["status"] == "ready"
    assert env.api("GET", f"/policy-set-versions/{version_id}").json()["data"]["links"].get("upload") is None
