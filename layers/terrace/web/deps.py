"""FastAPI dependencies: the container and the calling principal."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs

from fastapi import Depends, Request

from terrace.bootstrap import Container
from terrace.domain.errors import Unauthenticated
from terrace.domain.principal import Principal
from terrace.web.audit_trail import note_actor
from terrace.web.rate_limit import AUTHENTICATED, bearer_of


def get_container(request: Request) -> Container:
    container: Container = request.app.state.container
    return container


def bearer_token(request: Request) -> str:
    token = bearer_of(request.headers.get("authorization", ""))
    if token is None:
        raise Unauthenticated("an API token is required: send Authorization: Bearer <token>")
    return token


def get_principal(request: Request, container: Annotated[Container, Depends(get_container)]) -> Principal:
    principal = container.accounts.authenticate(bearer_token(request))
    note_actor(request, principal)  # the request's audit event names its caller
    setattr(request.state, AUTHENTICATED, True)  # the rate limit keys this token's next requests on it
    return principal


ContainerDep = Annotated[Container, Depends(get_container)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]


async def form_fields(request: Request) -> dict[str, str]:
    """The url-encoded form body (no blocking I/O: the body is already in memory); a repeated field's last value."""
    parsed = parse_qs((await request.body()).decode("utf-8", "replace"), keep_blank_values=True)
    return {key: values[-1] for key, values in parsed.items()}


FormDep = Annotated[dict[str, str], Depends(form_fields)]
