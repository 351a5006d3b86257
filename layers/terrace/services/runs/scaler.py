"""The scaler: starts runners per organization for its jobs, within a global maximum.

A runner serves one organization for its life. Each tick compares, per organization, the jobs that
need a runner (queued or running phases, from the open-runs index) with the runners alive for it;
mints a runner token bound to that organization for every runner it starts; retires idle runners of
organizations with nothing to do when others wait for room; and revokes the tokens of runners that
are gone.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime
from typing import Any

from terrace.adapters.runner_launchers import RunnerCredential, RunnerLauncher
from terrace.config import Settings
from terrace.domain import clock
from terrace.domain import runs as rs
from terrace.domain.ids import new_id
from terrace.domain.principal import PrincipalKind
from terrace.services.access.accounts import AccountService
from terrace.services.runs.store import RunStore

log = logging.getLogger("terrace.scaler")
RUNNER_TOKEN_SUBJECT = "#runners"  # not a valid organization name: runner tokens list apart from any org's
REVOKE_GRACE_S = 120  # a task just started may not be listed yet


class Scaler:
    def __init__(
        self, store: RunStore, accounts: AccountService, launcher: RunnerLauncher | None, settings: Settings
    ) -> None:
        self._store, self._accounts, self._settings = store, accounts, settings
        self.launcher = launcher  # set late locally: the launcher is made once the stack is up

    def demand(self) -> Counter[str]:
        """Per organization: phases queued or running (each needs a runner)."""
        busy = rs.QUEUED | rs.RUNNING
        return Counter(entry["organization"] for entry in self._store.open_runs() if entry["status"] in busy)

    def scale_once(self) -> dict[str, Any]:
        demand = self.demand()
        if self.launcher is None:
            return {"demand": dict(demand), "live": None, "started": 0, "reason": "no launcher configured"}
        live_runners = self.launcher.live()
        self._revoke_gone({runner.token_id for runner in live_runners})
        live = Counter(runner.organization for runner in live_runners)
        needs = {org: wanted - live[org] for org, wanted in sorted(demand.items()) if wanted > live[org]}
        room = max(0, self._settings.max_runners - sum(live.values()))
        short = sum(needs.values()) - room
        retired = 0
        for org in sorted(live):
            if short - retired <= 0:
                break
            if demand[org] == 0:  # nothing queued or running: its runners are idle
                retired += self.launcher.retire(org, min(live[org], short - retired))
        started: dict[str, int] = {}
        while room > 0 and needs:
            for org in list(needs):  # round-robin: every waiting organization gets a runner before any gets two
                if room == 0:
                    break
                started[org] = started.get(org, 0) + self._start(org)
                room -= 1
                needs[org] -= 1
                if needs[org] == 0:
                    del needs[org]
        if started:
            log.info("started runners %s for demand %s (live %s)", started, dict(demand), dict(live))
        return {"demand": dict(demand), "live": dict(live), "started": started, "retired": retired}

    def _start(self, organization: str) -> int:
        assert self.launcher is not None
        credential = self.credential(organization)
        started = self.launcher.launch([credential])
        if credential.token_id not in started:
            self._accounts.revoke_token(credential.token_id)
        return len(started)

    def credential(self, organization: str) -> RunnerCredential:
        """A runner token for one runner of `organization` (revoked once the runner is gone, else it expires)."""
        runner_id = new_id("runner")
        ttl = self._settings.runner_token_ttl_s
        issued = self._accounts.issue_token(
            PrincipalKind.RUNNER,
            RUNNER_TOKEN_SUBJECT,
            description=runner_id,
            organization=organization,
            ttl_s=ttl,
        )
        retire_at = int(clock.epoch()) + max(60, ttl - self._settings.phase_deadline_s)
        return RunnerCredential(runner_id, organization, issued.token.id, issued.secret, retire_at)

    def _revoke_gone(self, live_token_ids: set[str]) -> None:
        now = clock.epoch()
        for token in self._accounts.list_tokens(RUNNER_TOKEN_SUBJECT):
            created = datetime.fromisoformat(token.created_at.replace("Z", "+00:00")).timestamp()
            if token.id not in live_token_ids and now - created > REVOKE_GRACE_S:
                try:
                    self._accounts.revoke_token(token.id)
                except Exception:
                    log.info("runner token %s already gone", token.id)
