"""/api/v2 GitHub App installations (HCP's `github-app-installations`, go-tfe's `GHAInstallations`): those of the
deployment's GitHub App that an organization of the caller may use (`services/vcs/github_app.py`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from terrace.adapters.github_app import Installation
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, resource, respond, respond_page

router = APIRouter(prefix="/api/v2")


def serialize_installation(installation: Installation, page: str) -> dict[str, Any]:
    attrs = {
        "installation-id": installation.id,
        "installation-type": installation.account_type,
        "installation-url": page,
        "icon-url": installation.avatar_url,
        "name": installation.account,
    }
    return resource("github-app-installations", f"ghain-{installation.id}", attrs, {})


@router.get("/github-app/installations")
def list_installations(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    app = container.github_app_installations
    return respond_page(request, app.list(principal), lambda i: serialize_installation(i, app.page_of(i)))


@router.get("/github-app/installation/{installation_id}")
def read_installation(installation_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    app = container.github_app_installations
    found = app.get(principal, installation_id)
    return respond(serialize_installation(found, app.page_of(found)))
