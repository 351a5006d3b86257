"""FastAPI dependencies: the container and the calling principal."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from terrace.bootstrap import Container
from terrace.domain.errors import Unauthenticated
from terrace.domain.principal import Principal


def get_container(request: Request) -> Container:
    container: Container = request.app.state.container
    return container


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise Unauthenticated("an API token is required: send Authorization: Bearer <token>")
    return value.strip()


def get_principal(request: Request, container: Annotated[Container, Depends(get_container)]) -> Principal:
    return container.accounts.authenticate(bearer_token(request))


ContainerDep = Annotated[Container, Depends(get_container)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
