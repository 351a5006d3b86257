"""`terrace tools sync`: the deployment's tool catalog refreshed from the release mirrors' indexes (HashiCorp's
`<mirror>/terraform/index.json`, OpenTofu's release API or `<mirror>/api.json`): every released version the catalog
lacks is added as an official, enabled version. The mirrors are the operator's settings, never a tenant's."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from terrace.bootstrap import Container

tools_app = typer.Typer(help="The deployment's terraform and OpenTofu versions.", no_args_is_help=True)


def read_index(url: str, max_bytes: int, ca_bundle: str | None = None) -> bytes:
    """GET `url` (at most `max_bytes`, 60 s)."""
    import ssl

    import httpx

    verify = ssl.create_default_context(cafile=ca_bundle) if ca_bundle else True
    body = bytearray()
    with httpx.Client(verify=verify, timeout=60, follow_redirects=True) as http, http.stream("GET", url) as answer:
        answer.raise_for_status()
        for chunk in answer.iter_bytes():
            body += chunk
            if len(body) > max_bytes:
                raise ValueError(f"{url} is larger than {max_bytes} bytes")
    return bytes(body)


def sync(container: Container, read: Callable[[str], bytes]) -> dict[str, list[str]]:
    """The versions added to each tool's catalog from what `read(index_url)` answers."""
    from terrace.services.admin import tool_releases

    settings = container.settings
    mirrors = {"terraform": settings.tool_mirror_terraform, "opentofu": settings.tool_mirror_opentofu}
    added = {}
    for tool, base in mirrors.items():
        versions = tool_releases.index_versions(tool, read(tool_releases.index_url(tool, base)))
        added[tool] = container.tool_versions.sync(tool, versions)
    return added


@tools_app.command("sync")
def sync_command(
    ca_bundle: Annotated[str, typer.Option(help="CA bundle the mirrors' certificates chain to.")] = "",
) -> None:
    """Add the released versions the mirrors list and the catalog lacks."""
    from terrace.cli import _container, _fail
    from terrace.services.admin import tool_releases

    try:
        added = sync(_container(), lambda url: read_index(url, tool_releases.INDEX_MAX, ca_bundle or None))
    except Exception as exc:  # an unreachable mirror, an index that is not one: said, not a traceback
        raise _fail(f"tools sync failed: {exc}") from exc
    for tool, versions in added.items():
        typer.echo(f"{tool}: {len(versions)} added{': ' + ', '.join(versions) if versions else ''}")
