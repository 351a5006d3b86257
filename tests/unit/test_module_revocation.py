"""Revoking a private module version (HCP Terraform's manage module versions API: `PATCH .../private/:org/:name/
:provider/:version` with `revocation`): only a deprecated version is revoked; a configuration uploaded after the
revocation can no longer install it (the registry protocol neither lists nor serves it), one from before still
does (existing users, with their runs' warnings); taking the revocation back leaves the version deprecated."""

from __future__ import annotations

import time
from typing import Any

from run_helpers import RunEnv, make_run_env, tarball
from terrace.domain import clock
from terrace.domain.principal import PrincipalKind
from test_registry_modules import MODULE_TF, _module, _publish, _registry

VERSION = "/organizations/acme/registry-modules/private/acme/vpc/aws/1.0.0"
DEPRECATE = {"deprecation": {"deprecated-status": "Deprecated", "reason": "use 2.x", "link": "https://example.com/2"}}
REVOKE = {"revocation": {"status": "Revoked", "message": "CVE-1", "link": "https://example.com/cve"}}


def _patch(env: RunEnv, attributes: dict[str, Any]) -> Any:
    return env.api("PATCH", VERSION, {"data": {"type": "module-versions", "attributes": attributes}})


def _run_token(env: RunEnv) -> dict[str, str]:
    """The token of a run of a configuration uploaded now (what its `terraform init` installs modules with)."""
    run = env.create_run(env.upload_config())
    issued = env.container.accounts.issue_token(
        PrincipalKind.RUN, run["id"], organization="acme", workspace_id=env.workspace_id
    )
    return {"Authorization": f"Bearer {issued.secret}"}


def _listed(env: RunEnv, headers: dict[str, str] | None = None) -> list[str]:
    answer = _registry(env, "acme/vpc/aws/versions", headers)
    assert answer.status_code == 200, answer.text
    return [v["version"] for v in answer.json()["modules"][0]["versions"]]


def test_a_revoked_version_installs_only_for_configurations_from_before_its_revocation() -> None:
    env = make_run_env()
    _module(env)
    _publish(env, "1.0.0", tarball({"main.tf": MODULE_TF}))
    refused = _patch(env, REVOKE)
    assert refused.status_code == 422 and "deprecated before" in refused.json()["errors"][0]["detail"]
    assert _patch(env, DEPRECATE).status_code == 200
    existing = _run_token(env)  # a configuration uploaded before the revocation

    revoked = _patch(env, REVOKE)
    assert revoked.status_code == 200, revoked.text
    document = revoked.json()["data"]
    assert document["type"] == "registry-module-versions"
    assert document["attributes"]["revocation"] == {"status": "revoked", "message": "CVE-1",
                                                    "link": "https://example.com/cve"}  # fmt: skip
    module = env.api("GET", "/organizations/acme/registry-modules/private/acme/vpc/aws").json()["data"]
    assert module["attributes"]["revoked-versions"] == ["1.0.0"]
    revoked_at = (env.container.module_versions.of_module(module["id"])[0].revocation or {})["revoked-at"]
    deadline = time.monotonic() + 5
    while clock.now_iso() <= revoked_at and time.monotonic() < deadline:  # a configuration strictly after it
        time.sleep(0.001)

    # a new user (a person's own `terraform init`, a run of a configuration from after): neither listed nor served
    assert _listed(env) == []
    download = _registry(env, "acme/vpc/aws/1.0.0/download")
    assert download.status_code == 404 and "revoked" in download.json()["errors"][0]["detail"]
    new = _run_token(env)
    assert _listed(env, new) == [] and _registry(env, "acme/vpc/aws/1.0.0/download", new).status_code == 404
    # an existing user: still listed (with its deprecation, which its run's log shows) and served
    assert _listed(env, existing) == ["1.0.0"]
    (entry,) = _registry(env, "acme/vpc/aws/versions", existing).json()["modules"][0]["versions"]
    assert entry["revocation"] == {"message": "CVE-1", "link": "https://example.com/cve"}  # the runner's warning
    assert _registry(env, "acme/vpc/aws/1.0.0/download", existing).status_code == 204

    undeprecate = _patch(env, {"deprecation": {"deprecated-status": "Undeprecated"}})
    assert undeprecate.status_code == 422  # revoked: stays deprecated until its revocation is taken back
    unrevoked = _patch(env, {"revocation": {"status": "Unrevoked"}}).json()["data"]["attributes"]["revocation"]
    assert unrevoked == {"status": "unrevoked"}
    listed = _registry(env, "acme/vpc/aws/versions").json()["modules"][0]["versions"]
    assert listed == [{"version": "1.0.0", "deprecation": {"reason": "use 2.x", "link": "https://example.com/2"}}]
    for bad in ({"status": "Gone"}, {"status": "Revoked", "link": "ftp://x"}, "yes"):
        assert _patch(env, {"revocation": bad}).status_code == 422, bad
