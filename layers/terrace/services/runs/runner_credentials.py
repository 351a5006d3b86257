"""What a runner Terrace starts holds, and when it stops holding it: a single-use enrollment code per runner, which
the runner exchanges at start for a runner token of its one organization (`RunnerEnrollments.exchange`); the
tokens of runners that are gone are revoked (a runner just started may not be listed yet: `REVOKE_GRACE_S`)."""

from __future__ import annotations

import logging
from datetime import datetime

from terrace.adapters.runner_launcher import RunnerCredential
from terrace.config import Settings
from terrace.domain import clock
from terrace.domain.ids import new_id
from terrace.services.access.accounts import AccountService
from terrace.services.access.runner_enrollment import RUNNER_TOKEN_SUBJECT, RunnerEnrollments

log = logging.getLogger("terrace.scaler")
REVOKE_GRACE_S = 120  # a task just started may not be listed yet


class RunnerCredentials:
    def __init__(self, accounts: AccountService, enrollments: RunnerEnrollments, settings: Settings) -> None:
        self._accounts, self._enrollments, self._settings = accounts, enrollments, settings

    def issue(
        self,
        organization: str,
        keep_warm: bool = False,
        lanes: tuple[str, ...] = (),
        warm_s: int = 0,
        *,
        bound: bool = False,
    ) -> RunnerCredential:
        """What one runner of `organization` starts with: a single-use enrollment code it exchanges for its
        token at start (revoked once the runner is gone, else it expires); `bound`: the code is good only for
        the identity its launch reports (`bind`)."""
        runner_id = new_id("runner")
        ttl = self._settings.runner_token_ttl_s
        expires = int(clock.epoch()) + ttl
        code, token_id = self._enrollments.create(runner_id, organization, expires, bound=bound)
        retire_at = int(clock.epoch()) + max(60, ttl - self._settings.phase_deadline_s)
        return RunnerCredential(runner_id, organization, token_id, code, retire_at, keep_warm, lanes, warm_s)

    def bind(self, credential: RunnerCredential, identity: str) -> None:
        """The launched runner's identity: only it may exchange the code."""
        self._enrollments.bind(credential.enrollment_code, identity)

    def cancel(self, credential: RunnerCredential) -> None:
        """The runner did not start: its code is void."""
        self._enrollments.cancel(credential.enrollment_code)

    def runner_token(self, organization: str) -> str:
        """A runner token of `organization` enrolled at once: for a runner started by hand (tests, an operator)."""
        runner_id = new_id("runner")
        expires = int(clock.epoch()) + self._settings.runner_token_ttl_s
        code, _ = self._enrollments.create(runner_id, organization, expires, bound=False)
        return self._enrollments.exchange(code)[1].secret

    def revoke_gone(self, live_token_ids: set[str]) -> None:
        """Revokes the runner tokens no live runner holds (older than `REVOKE_GRACE_S`)."""
        now = clock.epoch()
        for token in self._accounts.list_tokens(RUNNER_TOKEN_SUBJECT):
            created = datetime.fromisoformat(token.created_at.replace("Z", "+00:00")).timestamp()
            if token.id not in live_token_ids and now - created > REVOKE_GRACE_S:
                try:
                    self._accounts.revoke_token(token.id)
                except Exception:
                    log.info("runner token %s already gone", token.id)
