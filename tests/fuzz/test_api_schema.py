"""Schema fuzzing of /api/v2 and /state/v1 (OpenAPI from the app itself): no input a client can send is a 5xx.

Runs in-process on the memory container, as a signed-in owner of organization `acme` with workspace `prod`
(path parameters point at them, so requests get past authentication and lookup). Every case starts from a
fresh container. `make test` runs a bounded, derandomized pass of valid inputs (TERRACE_FUZZ_EXAMPLES small);
`make fuzz` runs the full one, with inputs that break the schema too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from fastapi import FastAPI
from schemathesis.generation import GenerationMode
from terrace.bootstrap import Container, build_memory
from terrace.domain.principal import Principal, PrincipalKind
from terrace.web.app import create_app

sys.path.insert(0, str(Path(__file__).parent.parent / "unit"))
from run_helpers import tarball  # noqa: E402

EXAMPLES = int(os.environ.get("TERRACE_FUZZ_EXAMPLES", "1"))  # make test: one per operation (about 390 of them)
FULL = os.environ.get("TERRACE_FUZZ_FULL") == "1"
SEEDED: dict[str, str] = {}
pytestmark = pytest.mark.fuzz


def seeded(locked: bool = False) -> tuple[Container, str, str]:
    """A container with user alice owning `acme`/`prod` (locked by her when `locked`, so that state writes get
    past the lock check), an uploaded configuration, a pending run and a variable; returns it, alice's token and
    the workspace id."""
    container = build_memory()
    user = container.accounts.create_user("alice", "alice@example.com")
    principal = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(principal, "acme", "ops@example.com")
    ws = container.workspaces.create(principal, "acme", {"name": "prod", "execution-mode": "remote"})
    issued = container.accounts.issue_token(PrincipalKind.USER, user.id)
    token = issued.secret
    if locked:
        container.locks.lock(principal, ws, "fuzzing")
    cv = container.configuration_versions.create(principal, ws, {"auto-queue-runs": False})
    container.blobs.put(cv.blob_key, tarball({"main.tf": 'output "x" { value = 1 }'}))
    run = container.runs.create(principal, ws, {"message": "seeded"}, cv.id)
    var = container.variables.create(principal, ws, {"key": "region", "value": "eu", "category": "terraform"})
    SEEDED.update(
        token=token,
        ws=ws.id,
        user=user.id,
        cv=cv.id,
        run=run.id,
        plan=run.plan.id,
        apply=run.apply.id,
        var=var.id,
        token_id=issued.token.id,
    )
    return container, token, ws.id


APP: FastAPI = create_app(seeded()[0])
schema = schemathesis.openapi.from_asgi("/api/openapi.json", APP).include(path_regex=r"^/(api/v2|state/v1)/")
if FULL:  # also bodies and parameters that break the schema on purpose
    schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])


def _seed_path(case: Any) -> None:
    """Point path parameters at the seeded organization, workspace, user, run, variable and token."""
    params = case.path_parameters or {}
    path = case.path
    for key in list(params):
        if key == "org" or (key == "name" and path.startswith("/api/v2/organizations/{name}")):
            params[key] = "acme"
        elif key == "name":
            params[key] = "prod"
        elif key == "workspace_id":
            params[key] = SEEDED["ws"]
        elif key in ("user_id", "cv_id", "run_id", "plan_id", "apply_id", "var_id", "token_id"):
            params[key] = SEEDED[key.removesuffix("_id") if key != "token_id" else key]


def _seed_relationships(case: Any) -> None:
    """Point JSON:API relationships at the seeded workspace and configuration version."""
    data = case.body.get("data") if isinstance(case.body, dict) else None
    relationships = data.get("relationships") if isinstance(data, dict) else None
    if not isinstance(relationships, dict):
        return
    for name, seeded_id in (("workspace", SEEDED["ws"]), ("configuration-version", SEEDED["cv"])):
        target = relationships.get(name)
        if isinstance(target, dict) and isinstance(target.get("data"), dict):
            target["data"]["id"] = seeded_id


@schema.parametrize()
@hypothesis.settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not FULL,
    database=None,
    suppress_health_check=list(hypothesis.HealthCheck),
)
def test_no_server_errors(case: Any) -> None:
    APP.state.container, token, _ = seeded(locked=len(repr(case.body)) % 2 == 0)
    _seed_path(case)
    _seed_relationships(case)
    response = case.call(headers={"Authorization": f"Bearer {token}"}, allow_redirects=False)
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} -> {response.status_code}\n"
        f"body sent: {case.body!r}\nquery: {case.query!r}\nresponse: {response.text[:2000]}"
    )
