"""`terrace tools sync`: the deployment's tool catalog refreshed from the release mirrors' indexes (HashiCorp's
`<mirror>/terraform/index.json`, OpenTofu's release API or `<mirror>/api.json`): every released version the catalog
lacks is added as an official, enabled version (`services/admin/tool_sync.py`; on AWS the `tools_sync` function
runs the same daily). The mirrors are the operator's settings, never a tenant's."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from terrace.bootstrap import Container

tools_app = typer.Typer(help="The deployment's terraform and OpenTofu versions.", no_args_is_help=True)


def sync(container: Container, read: Callable[[str], bytes]) -> dict[str, list[str]]:
    """The versions added to each tool's catalog from what `read(index_url)` answers."""
    return container.tool_catalog_sync.sync(read)


@tools_app.command("sync")
def sync_command(
    ca_bundle: Annotated[str, typer.Option(help="CA bundle the mirrors' certificates chain to.")] = "",
) -> None:
    """Add the released versions the mirrors list and the catalog lacks."""
    from terrace.adapters.httpx_release_index import read_index
    from terrace.cli_admin import deployment, fail
    from terrace.services.admin import tool_releases

    try:
        added = sync(deployment(), lambda url: read_index(url, tool_releases.INDEX_MAX, ca_bundle or None))
    except Exception as exc:  # an unreachable mirror, an index that is not one: said, not a traceback
        raise fail(f"tools sync failed: {exc}") from exc
    for tool, versions in added.items():
        typer.echo(f"{tool}: {len(versions)} added{': ' + ', '.join(versions) if versions else ''}")
