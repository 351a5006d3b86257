"""/static in local mode and tests (on AWS CloudFront serves /static/* from the assets bucket)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import FileResponse

from terrace.domain.errors import NotFound
from terrace.web.static_files import static_files

router = APIRouter(include_in_schema=False)


@router.get("/static/{name}")
def static_file(name: str) -> FileResponse:
    path = static_files().get(name)
    if path is None or not path.is_file():
        raise NotFound(f"static file {name} not found")
    return FileResponse(path, headers={"Cache-Control": "public, max-age=300"})
