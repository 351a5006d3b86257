"""Domain errors -> HTTP for SCIM (`/scim/v2`, RFC 7644 3.12): a SCIM error document (`schemas`, `status`,
`detail`, a `scimType` on 400 and 409) as `application/scim+json`, whether the error comes from a route or from
what runs before it (the token's check, the body's reading). `web/errors.py` hands every domain error under
`/scim/` here."""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse

from terrace.domain import errors
from terrace.domain import scim as model

PREFIX = "/scim/"
MEDIA = "application/scim+json"
STATUS = {errors.Unauthenticated: 401, errors.Forbidden: 403, errors.NotFound: 404, errors.Conflict: 409,
          errors.PreconditionFailed: 412, errors.TooLarge: 413, errors.TooManyRequests: 429, errors.Invalid: 400,
          errors.BadRequest: 400}  # fmt: skip
SCIM_TYPES = {errors.Conflict: "uniqueness", model.InvalidFilter: "invalidFilter", model.InvalidPath: "invalidPath",
              model.InvalidSyntax: "invalidSyntax", errors.Invalid: "invalidValue"}  # fmt: skip


def scim_response(content: Any, status: int = 200, version: str | None = None) -> JSONResponse:
    headers = {"ETag": version} if version else None
    return JSONResponse(content, status_code=status, media_type=MEDIA, headers=headers)


def scim_error(exc: errors.TerraceError) -> JSONResponse:
    status = next((code for kind, code in STATUS.items() if isinstance(exc, kind)), 400)
    body: dict[str, Any] = {"schemas": [model.ERROR], "status": str(status), "detail": exc.detail}
    scim_type = next((name for kind, name in SCIM_TYPES.items() if isinstance(exc, kind)), None)
    if scim_type and status in (400, 409):
        body["scimType"] = scim_type
    headers = {"WWW-Authenticate": 'Bearer realm="terrace-scim"'} if status == 401 else None
    return JSONResponse(body, status_code=status, media_type=MEDIA, headers=headers)
