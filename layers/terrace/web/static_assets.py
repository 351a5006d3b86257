"""The web UI's static files: the project's own (web/static) and htmx, pinned in package.json.

`make dev` and the tests serve them at /static from the app; on AWS the CDK app uploads the same files
to the assets bucket, which CloudFront serves at /static/*.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from terrace.domain.errors import NotFound

OWN = Path(__file__).parent / "static"
REPOSITORY = Path(__file__).resolve().parents[3]
VENDORED = {"htmx.min.js": REPOSITORY / "node_modules" / "htmx.org" / "dist" / "htmx.min.js"}

router = APIRouter(include_in_schema=False)


def static_files() -> dict[str, Path]:
    """name -> file of everything served under /static."""
    files = {path.name: path for path in sorted(OWN.iterdir()) if path.is_file()}
    files.update(VENDORED)
    return files


@router.get("/static/{name}")
def static_file(name: str) -> FileResponse:
    path = static_files().get(name)
    if path is None or not path.is_file():
        raise NotFound(f"static file {name} not found")
    return FileResponse(path, headers={"Cache-Control": "public, max-age=300"})
