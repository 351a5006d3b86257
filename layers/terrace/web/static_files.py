"""The web UI's static files: the project's own (web/static) and htmx, pinned in package.json (`npm ci`).
`make wheel` copies htmx into web/static/vendor, so an installed package serves it without node_modules.

`make dev` and the tests serve them at /static from the app (`static_assets`); on AWS the CDK app
uploads the same files to the assets bucket, which CloudFront serves at /static/*.
"""

from __future__ import annotations

from pathlib import Path

OWN = Path(__file__).parent / "static"
REPOSITORY = Path(__file__).resolve().parents[3]
PACKAGED = OWN / "vendor"  # copies made at build time (make wheel)
VENDORED = {"htmx.min.js": REPOSITORY / "node_modules" / "htmx.org" / "dist" / "htmx.min.js"}


def static_files() -> dict[str, Path]:
    """name -> file of everything served under /static."""
    files = {path.name: path for path in sorted(OWN.iterdir()) if path.is_file()}
    files.update({name: source if source.is_file() else PACKAGED / name for name, source in VENDORED.items()})
    return files
