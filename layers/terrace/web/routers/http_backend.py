"""The Terraform/OpenTofu `http` state backend at /state/v1/{organization}/{workspace} (tfc-api.md §2).

Same workspaces, state history and locks as the TFC API. Authentication: HTTP basic with a token as the
password (or a bearer token). Errors are plain JSON, mapped from domain errors in this module's own table;
lock conflicts answer with the holder's LockInfo, as the clients expect.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse, StreamingResponse

from terrace.bootstrap import Container
from terrace.domain import errors
from terrace.domain.principal import Principal
from terrace.domain.workspace import WorkspaceLock
from terrace.web import bodies
from terrace.web.audit_trail import note_actor
from terrace.web.deps import ContainerDep
from terrace.web.jsonapi import RawBody

router = APIRouter(prefix="/state/v1")
PATH = "/{org}/{name}"

STATUS: list[tuple[type[errors.TerraceError], int]] = [
    (errors.Unauthenticated, 401),
    (errors.Forbidden, 403),
    (errors.NotFound, 404),
    (errors.Locked, 423),
    (errors.Conflict, 409),
    (errors.PreconditionFailed, 412),
    (errors.TooLarge, 413),
    (errors.Invalid, 422),
    (errors.BadRequest, 400),
]


def lock_info(lock: WorkspaceLock, org: str, name: str) -> dict[str, Any]:
    """The holder's LockInfo: as the client sent it, or synthesized for locks taken via the TFC API."""
    if lock.info:
        return dict(lock.info)
    return {
        "ID": lock.lock_id or f"{org}/{name}",
        "Operation": "",
        "Info": lock.reason,
        "Who": lock.username,
        "Version": "",
        "Created": lock.created_at,
        "Path": "",
    }


def error_response(exc: errors.TerraceError, org: str, name: str) -> JSONResponse:
    status = next((code for kind, code in STATUS if isinstance(exc, kind)), 400)
    lock = exc.meta.get("lock")
    if isinstance(lock, WorkspaceLock):
        return JSONResponse(lock_info(lock, org, name), status_code=status)
    headers = {"WWW-Authenticate": 'Basic realm="terrace"'} if status == 401 else None
    return JSONResponse({"error": exc.title, "detail": exc.detail}, status_code=status, headers=headers)


def authenticate(request: Request, container: Container) -> Principal:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    token = ""
    if scheme.lower() == "basic":
        try:
            token = base64.b64decode(value.strip(), validate=True).decode().partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            token = ""
    elif scheme.lower() == "bearer":
        token = value.strip()
    if not token:
        raise errors.Unauthenticated("send an API token as the basic-auth password (any username)")
    principal = container.accounts.authenticate(token)
    note_actor(request, principal)  # the request's audit event names its caller
    return principal


def handle(
    request: Request,
    body: bytes,
    container: Container,
    org: str,
    name: str,
    action: Callable[[Principal, bytes], Response],
) -> Response:
    try:
        principal = authenticate(request, container)
        return action(principal, body)
    except errors.TerraceError as exc:
        return error_response(exc, org, name)


@router.get(PATH)
def read_state(org: str, name: str, request: Request, container: ContainerDep) -> Response:
    def action(principal: Principal, _: bytes) -> Response:
        ws = container.state_versions.resolve_workspace(principal, org, name)
        sv = None
        if ws is not None:
            try:
                sv = container.state_versions.current(principal, ws.id)
            except errors.NotFound:
                sv = None
        if sv is None:
            return Response(status_code=204)
        if sv.size > container.settings.http_state_redirect_bytes:  # straight from storage, past Lambda's 6 MB
            return RedirectResponse(container.state_versions.state_url(sv), status_code=307)
        md5 = base64.b64encode(bytes.fromhex(sv.md5)).decode()
        return StreamingResponse(
            container.state_versions.iter_state(sv),
            media_type="application/json",
            headers={"Content-MD5": md5, "Content-Length": str(sv.size)},
        )

    return handle(request, b"", container, org, name, action)


@router.post(PATH, openapi_extra=bodies.STATE_FILE)
def write_state(org: str, name: str, request: Request, body: RawBody, container: ContainerDep) -> Response:
    def action(principal: Principal, body: bytes) -> Response:
        sent_md5 = request.headers.get("content-md5")
        if sent_md5 and sent_md5.strip() != base64.b64encode(hashlib.md5(body).digest()).decode():  # noqa: S324
            raise errors.BadRequest("Content-MD5 does not match the body")
        container.state_versions.write_http(principal, org, name, body, request.query_params.get("ID"))
        return Response(status_code=200)

    return handle(request, body, container, org, name, action)


@router.delete(PATH)
def delete_state(org: str, name: str, request: Request, container: ContainerDep) -> Response:
    def action(principal: Principal, _: bytes) -> Response:
        ws = container.state_versions.resolve_workspace(principal, org, name)
        if ws is not None:
            container.state_versions.delete_history(principal, ws)
        return Response(status_code=200)

    return handle(request, b"", container, org, name, action)


# LOCK/UNLOCK cannot cross CloudFront: `<address>/lock` takes POST to lock and DELETE to unlock
# (lock_method = "POST", unlock_method = "DELETE" in the backend block).
@router.post(PATH + "/lock", openapi_extra=bodies.LOCK_INFO)
@router.api_route(PATH, methods=["LOCK"], openapi_extra=bodies.LOCK_INFO)
def lock_state(org: str, name: str, request: Request, body: RawBody, container: ContainerDep) -> Response:
    def action(principal: Principal, body: bytes) -> Response:
        return JSONResponse(container.http_backend_locks.lock(principal, org, name, body), status_code=200)

    return handle(request, body, container, org, name, action)


@router.delete(PATH + "/lock", openapi_extra=bodies.UNLOCK_INFO)
@router.api_route(PATH, methods=["UNLOCK"], openapi_extra=bodies.UNLOCK_INFO)
def unlock_state(org: str, name: str, request: Request, body: RawBody, container: ContainerDep) -> Response:
    def action(principal: Principal, body: bytes) -> Response:
        container.http_backend_locks.unlock(principal, org, name, body)
        return Response(status_code=200)

    return handle(request, body, container, org, name, action)
