"""What the embedded server (`terrace serve`, `make dev`) keeps in its data directory besides the adapters'
files, and what it does at start and stop:

- `url-signing.secret` (0600, `adapters/file_url_signing_secret.py`): the HMAC key of blob URLs, log URLs and web
  sessions, kept across restarts so links and sessions survive them, never in an environment variable;
  `admin.token` (0600): the seeded admin's token, reused while it works.
- `hand_back`: phases that were running on this server's runner processes when they died (a stop, a crash)
  go back through `JobRetries.retry_or_fail`, the rules the reaper applies on AWS to a runner that stopped
  heartbeating: a plan or a not-yet-applying apply is retried, an apply that had started ends `errored`
  (lock released, tokens revoked).
- `resume_events`: the events the previous process had taken off the queue and not acknowledged (it died handling
  them) are handled again at once, not after the queue's visibility timeout (a minute).
- `guard_link_local`: as root with a usable iptables, the tenant children's uids (`adapters/tenant_identity.py`;
  a git clone keeps the network to reach its forge) cannot reach link-local addresses (the instance metadata, the
  ECS credentials endpoint): the runner's own rule (`runner/sandbox.py`) on their range, set once at start
  (`TERRACE_TENANT_BLOCK_LINK_LOCAL`: `auto` on ECS or EC2, `true`, `false`).
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from terrace.adapters import file_url_signing_secret, tenant_identity
from terrace.config import Settings
from terrace.domain import runs as rs
from terrace.domain.errors import Unauthenticated
from terrace.runner import sandbox
from terrace.services.runs.store import retrying

if TYPE_CHECKING:
    from terrace.bootstrap import Container

log = logging.getLogger("terrace.local")
SECRET_FILE = file_url_signing_secret.SECRET_FILE
ADMIN_TOKEN_FILE = "admin.token"


def guard_link_local(
    settings: Settings, env: Mapping[str, str] = os.environ, uid_range: tuple[int, int] = tenant_identity.UID_RANGE
) -> bool:
    """At start: whether the server's tenant uids are now kept from link-local addresses (logged either way)."""
    if not tenant_identity.probe():  # not root: tenant children run as the server's own uid, nothing to match on
        return False
    mode = settings.tenant_block_link_local
    return sandbox.guard_link_local(mode, env, uid_range, ec2=sandbox.on_ec2, who="tenant children")


def write_private(path: Path, text: str) -> None:
    """Create `path` with mode 0600 from the start (never world-readable, not even for an instant)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    path.chmod(0o600)


def url_signing_secret(data_dir: Path) -> str:
    """The data folder's URL-signing secret (`TERRACE_URL_SIGNING_SECRET` is not read: the server makes its own)."""
    if os.environ.get("TERRACE_URL_SIGNING_SECRET"):
        log.warning("TERRACE_URL_SIGNING_SECRET is ignored: the embedded server keeps its own in %s", data_dir)
    return file_url_signing_secret.load(data_dir)


def saved_admin_token(container: Container, data_dir: Path) -> str | None:
    """The admin token saved by an earlier start, if it still authenticates."""
    path = data_dir / ADMIN_TOKEN_FILE
    if not path.exists():
        return None
    raw = path.read_text().strip()
    try:
        container.accounts.authenticate(raw)
    except Unauthenticated:
        return None
    return raw


def save_admin_token(data_dir: Path, token: str) -> None:
    write_private(data_dir / ADMIN_TOKEN_FILE, token + "\n")


def _retry(container: Container, run_id: str, name: str, reason: str) -> object:
    return container.job_retries.retry_or_fail(container.run_store.load(run_id), name, reason)


def hand_back(container: Container, reason: str, ran_on: Callable[[str], bool] = lambda _ref: True) -> list[str]:
    """Retry or fail every running phase whose runner (`<runner id>@<token id>`) satisfies `ran_on`;
    returns the run ids handed back."""
    handed: list[str] = []
    for entry in container.run_store.open_runs():
        run_id = entry["run_id"]
        try:
            run = container.run_store.load(run_id)
            name = "plan" if run.status == rs.PLANNING else "apply"
            state = run.phase(name)
            if run.status not in rs.RUNNING or state.status != rs.P_RUNNING or not ran_on(state.runner_id or ""):
                continue
            retrying(functools.partial(_retry, container, run_id, name, reason))
            handed.append(run_id)
        except Exception:
            log.exception("could not hand back the job of %s", run_id)
    if handed:
        log.warning("handed back the jobs of %s: %s", ", ".join(handed), reason)
    return handed


def resume_events(container: Container) -> int:
    """Make the events a dead server was handling visible again (the embedded server is the queue's only
    consumer); returns how many."""
    release = getattr(container.event_queue, "release_received", None)
    released = int(release()) if release is not None else 0
    if released:
        log.warning("%d events the previous server was handling are handled again", released)
    return released
