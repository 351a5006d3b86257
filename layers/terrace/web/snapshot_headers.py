"""`X-Terraform-Snapshot-Interval` on the state-version responses a `cloud` client reads it from (added by the
app's `ExtraHeaders` middleware, apart from the state-version routes so that the API Lambda does not build them
to answer another request)."""

from __future__ import annotations

import re

SNAPSHOT_INTERVAL_HEADER = "X-Terraform-Snapshot-Interval"
# The responses a `cloud` client reads the header from (OpenTofu/Terraform `cloud/state.go`, through go-tfe's
# response hook): the current state version (also its 404), creating one, and the read that ends an upload.
_SNAPSHOT_PATHS = re.compile(
    r"^/api/v2/(workspaces/[^/]+/(state-versions|current-state-version)|state-versions/[^/]+)\Z"
)


def snapshot_headers(path: str, interval_s: int) -> dict[str, str]:
    """`X-Terraform-Snapshot-Interval: <seconds>` for the state-version responses clients read it from."""
    if interval_s <= 0 or not _SNAPSHOT_PATHS.match(path):
        return {}
    return {SNAPSHOT_INTERVAL_HEADER: str(min(interval_s, 3600))}
