"""The web UI's static files: the project's own (web/static) and htmx, pinned in package.json (`npm ci`).

`make dev` and the tests serve them at /static from the app (`static_assets`); on AWS the CDK app
uploads the same files to the assets bucket, which CloudFront serves at /static/*.
"""

from __future__ import annotations

from pathlib import Path

OWN = Path(__file__).parent / "static"
REPOSITORY = Path(__file__).resolve().parents[3]
VENDORED = {"htmx.min.js": REPOSITORY / "node_modules" / "htmx.org" / "dist" / "htmx.min.js"}


def static_files() -> dict[str, Path]:
    """name -> file of everything served under /static."""
    files = {path.name: path for path in sorted(OWN.iterdir()) if path.is_file()}
    files.update(VENDORED)
    return files
