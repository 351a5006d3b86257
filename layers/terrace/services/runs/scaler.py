"""The scaler: starts runners per organization for its jobs, within a global maximum.

A runner serves one organization for its life. Each tick compares, per organization, the jobs that
need a runner (queued or running phases, from the open-runs index) with the runners alive for it;
mints a runner token bound to that organization for every runner it starts; retires idle runners of
organizations with nothing to do when others wait for room; and revokes the tokens of runners that
are gone.

A tick runs on a schedule and whenever something may need a runner: after every enqueue, and when a
configuration version is created (`expect`): its run does not exist yet, but the runner's start (a Fargate
task, a Python process) then overlaps the upload. An organization expected so counts as needing one runner
until its run is queued (at most `EXPECT_S`). Every organization keeps `warm_runners_per_organization`
runners alive with the room real demand leaves; no organization gets more than `max_runners_per_organization`,
and all together no more than `max_runners`.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from terrace.adapters.runner_launcher import RunnerCredential, RunnerLauncher
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
EXPECT_S = 120  # how long a created configuration version counts as a run to come (its upload may be slow)


class Scaler:
    def __init__(
        self,
        store: RunStore,
        accounts: AccountService,
        launcher: RunnerLauncher | None,
        settings: Settings,
        organizations: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        self._store, self._accounts, self._settings = store, accounts, settings
        self._organizations = organizations  # every organization's key (warm runners)
        self.launcher = launcher  # set late locally: the launcher is made once the stack is up
        self.wake = threading.Event()  # set by `expect`: the local scaler loop ticks at once (AWS: an invoke)
        self._expected: dict[str, float] = {}  # organization -> until when it counts as needing a runner
        self._lock = threading.Lock()

    def expect(self, organization: str) -> None:
        """A run of `organization` is coming (its configuration is being uploaded): a runner should start now."""
        with self._lock:
            self._expected[organization] = clock.epoch() + EXPECT_S
        self.wake.set()

    def _add_expected(self, demand: Counter[str], extra: Iterable[str]) -> None:
        """Count each expected organization as needing a runner, until its run shows up in `demand` (or
        `EXPECT_S` passed)."""
        now = clock.epoch()
        with self._lock:
            for organization in extra:
                self._expected[organization] = now + EXPECT_S
            self._expected = {org: until for org, until in self._expected.items() if until > now and demand[org] == 0}
            for organization in self._expected:
                demand[organization] = 1

    def demand(self) -> Counter[str]:
        """Per organization: phases queued or running (each needs a runner); agent pools' runs need none."""
        busy = rs.QUEUED | rs.RUNNING
        return Counter(
            entry["organization"]
            for entry in self._store.open_runs()
            if entry["status"] in busy and not entry.get("agent_pool_id")
        )

    def scale_once(self, expect: Iterable[str] = ()) -> dict[str, Any]:
        """One tick; `expect`: organizations whose configuration version was just created."""
        demand = self.demand()
        self._add_expected(demand, expect)
        if self.launcher is None:
            return {"demand": dict(demand), "live": None, "started": 0, "reason": "no launcher configured"}
        live_runners = self.launcher.live()
        self._revoke_gone({runner.token_id for runner in live_runners})
        live = Counter(runner.organization for runner in live_runners)
        per_org = self._settings.max_runners_per_organization or self._settings.max_runners
        needs = {
            org: min(wanted, per_org) - live[org]
            for org, wanted in sorted(demand.items())
            if min(wanted, per_org) > live[org]
        }
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
        warm = self._keep_warm(room, live, started, per_org)
        if started or warm:
            log.info("started runners %s (warm %s) for demand %s (live %s)", started, warm, dict(demand), dict(live))
        return {"demand": dict(demand), "live": dict(live), "started": started, "warm": warm, "retired": retired}

    def _keep_warm(self, room: int, live: Counter[str], started: dict[str, int], per_org: int) -> dict[str, int]:
        """With the room real demand left: top every organization up to its warm runners."""
        wanted = min(self._settings.warm_runners_per_organization, per_org)
        warm: dict[str, int] = {}
        if wanted <= 0:
            return warm
        for org in sorted(self._organizations()):
            while room > 0 and live[org] + started.get(org, 0) + warm.get(org, 0) < wanted:
                warm[org] = warm.get(org, 0) + self._start(org, keep_warm=True)
                room -= 1
        return warm

    def _start(self, organization: str, keep_warm: bool = False) -> int:
        assert self.launcher is not None
        credential = self.credential(organization, keep_warm)
        started = self.launcher.launch([credential])
        if credential.token_id not in started:
            self._accounts.revoke_token(credential.token_id)
        return len(started)

    def credential(self, organization: str, keep_warm: bool = False) -> RunnerCredential:
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
        return RunnerCredential(runner_id, organization, issued.token.id, issued.secret, retire_at, keep_warm)

    def _revoke_gone(self, live_token_ids: set[str]) -> None:
        now = clock.epoch()
        for token in self._accounts.list_tokens(RUNNER_TOKEN_SUBJECT):
            created = datetime.fromisoformat(token.created_at.replace("Z", "+00:00")).timestamp()
            if token.id not in live_token_ids and now - created > REVOKE_GRACE_S:
                try:
                    self._accounts.revoke_token(token.id)
                except Exception:
                    log.info("runner token %s already gone", token.id)
