"""/api/v2 registry module tests (`terraform test -cloud-run=<host>/<org>/<name>/<provider>`; go-tfe's
`ConfigurationVersions.CreateForRegistryModule`, `TestRuns` and `TestVariables`), under
`organizations/:org/tests/registry-modules/:registry/:namespace/:name/:provider`: test configuration versions,
test runs (create, list, read, cancel, force-cancel; the log through `log-read-url`) and test variables. The use
case is `services/workflows/module_tests.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response

from terrace.bootstrap import Container
from terrace.domain import module_tests as model
from terrace.domain.runs import Run
from terrace.domain.variables import Variable
from terrace.web import run_documents
from terrace.web import run_serializers as rser
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    read_document,
    ref,
    relationship_id,
    resource,
    respond,
    respond_page,
)

BASE = "/organizations/{organization}/tests/registry-modules/{registry}/{namespace}/{name}/{provider}"
router = APIRouter(prefix="/api/v2")


@dataclass(frozen=True)
class ModulePath:
    """The module a route's path names: its organization and its address (registry, namespace, name, provider)."""

    organization: str
    address: tuple[str, str, str, str]

    @property
    def base(self) -> str:
        return f"/api/v2/organizations/{self.organization}/tests/registry-modules/{'/'.join(self.address)}"


def _module_path(organization: str, registry: str, namespace: str, name: str, provider: str) -> ModulePath:
    return ModulePath(organization, (registry, namespace, name, provider))


ModuleDep = Annotated[ModulePath, Depends(_module_path)]


def test_run(container: Container, run: Run, base: str) -> dict[str, Any]:
    test_run_id = model.test_run_id(run.id)
    return resource(
        "test-runs",
        test_run_id,
        {
            "status": model.status(run),
            "status-timestamps": model.status_timestamps(run),
            **model.result(run),
            "log-read-url": run_documents.log_url(container, run.plan, run),
            "error-message": run.error_message,
            "created-at": run.created_at,
        },
        {
            "configuration-version": ref("configuration-versions", run.configuration_version_id),
            "registry-module": ref("registry-modules", model.module_id_of(run.workspace_id)),
        },
        links={"self": f"{base}/test-runs/{test_run_id}"},
    )


def test_variable(v: Variable, base: str) -> dict[str, Any]:
    return resource(
        "vars",
        v.id,
        rser.variable_attributes(v),
        {"configurable": ref("registry-modules", model.module_id_of(v.workspace_id))},
        links={"self": f"{base}/vars/{v.id}"},
    )


@router.post(BASE + "/test-runs/configuration-versions")
def create_test_configuration_version(
    module: ModuleDep,
    _body: JSONBody,
    container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:
    """Any body or none, as go-tfe sends none."""
    cv, upload_url = container.module_tests.create_configuration(principal, module.organization, module.address)
    return respond(rser.configuration_version(cv, upload_url), 201)


@router.post(BASE + "/test-runs")
def create_test_run(
    module: ModuleDep,
    body: JSONBody,
    container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:
    data = read_document(body, "test-runs")
    cv_id = relationship_id(data, "configuration-version", "configuration-versions")
    run = container.module_tests.create_run(principal, module.organization, module.address, attributes(data), cv_id)
    return respond(test_run(container, run, module.base), 201)


@router.get(BASE + "/test-runs")
def list_test_runs(
    module: ModuleDep,
    request: Request,
    container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:
    runs = container.module_tests.runs(principal, module.organization, module.address)
    return respond_page(request, runs, lambda run: test_run(container, run, module.base))


@router.get(BASE + "/test-runs/{test_run_id}")
def read_test_run(
    module: ModuleDep,
    test_run_id: str,
    container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:
    run = container.module_tests.run(principal, module.organization, module.address, test_run_id)
    return respond(test_run(container, run, module.base))


@router.post(BASE + "/test-runs/{test_run_id}/cancel")
def cancel_test_run(
    module: ModuleDep,
    test_run_id: str,
    _body: JSONBody,
    container: ContainerDep,
    principal: PrincipalDep,
) -> Response:
    container.module_tests.cancel(principal, module.organization, module.address, test_run_id)
    return Response(status_code=202)


@router.post(BASE + "/test-runs/{test_run_id}/force-cancel")
def force_cancel_test_run(
    module: ModuleDep,
    test_run_id: str,
    _body: JSONBody,
    container: ContainerDep,
    principal: PrincipalDep,
) -> Response:
    container.module_tests.force_cancel(principal, module.organization, module.address, test_run_id)
    return Response(status_code=202)


@router.get(BASE + "/vars")
def list_test_variables(
    module: ModuleDep,
    request: Request,
    container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:
    found = container.module_tests.variables(principal, module.organization, module.address)
    return respond_page(request, found, lambda v: test_variable(v, module.base))


@router.post(BASE + "/vars")
def create_test_variable(
    module: ModuleDep,
    body: JSONBody,
    container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:
    data = read_document(body, "vars")
    created = container.module_tests.create_variable(principal, module.organization, module.address, attributes(data))
    return respond(test_variable(created, module.base), 201)


@router.get(BASE + "/vars/{var_id}")
def read_test_variable(
    module: ModuleDep,
    var_id: str,
    container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:
    found = container.module_tests.variable(principal, module.organization, module.address, var_id)
    return respond(test_variable(found, module.base))


@router.patch(BASE + "/vars/{var_id}")
def update_test_variable(
    module: ModuleDep,
    var_id: str,
    body: JSONBody,
    container: ContainerDep,
    principal: PrincipalDep,
) -> JSONAPIResponse:
    data = read_document(body, "vars")
    updated = container.module_tests.update_variable(
        principal, module.organization, module.address, var_id, attributes(data)
    )
    return respond(test_variable(updated, module.base))


@router.delete(BASE + "/vars/{var_id}")
def delete_test_variable(
    module: ModuleDep,
    var_id: str,
    container: ContainerDep,
    principal: PrincipalDep,
) -> Response:
    container.module_tests.delete_variable(principal, module.organization, module.address, var_id)
    return Response(status_code=204)
