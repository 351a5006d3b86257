"""Lambda "tools_sync": daily (EventBridge), the tool catalog refreshed from the release mirrors' indexes, as
`terrace tools sync` does (`services/admin/tool_sync.py`): every released terraform and OpenTofu version the
catalog lacks is added. An unreachable mirror or a body that is no index raises: the invocation fails, the
function's Errors metric (alarmed with `terrace:monitoring`) says so, and tomorrow's schedule tries again."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from terrace.bootstrap import aws_container

logger = Logger()

_get_container = aws_container  # built once per execution environment


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, list[str]]:
    added = _get_container().tool_catalog_sync.sync()
    logger.info("tool catalog synced", extra={"added": added})
    return added
