"""Runner enrollment codes (`domain/runner_enrollments.py`): the scaler starts a runner with a code instead of its
token, so what `ecs:DescribeTasks`, the ECS console and CloudTrail show of a task's environment cannot claim
jobs: the code is single-use, expires in minutes and, on ECS, is good only for the task it was started in.

Items: `enroll#<sha256 of the code>` / `enrollment` (the table's TTL removes it once expired). The exchange is one
conditional write (the item's version): of two presenters of one code, one wins. A second exchange of a used code
means someone else had it: the token it gave is revoked, so a stolen code costs the thief (and the runner) the
token rather than leaving it working.
"""

from __future__ import annotations

import logging
from typing import Any

from terrace.adapters.table import ConditionFailed, Table
from terrace.domain import clock
from terrace.domain.errors import Conflict, NotFound, Unauthenticated
from terrace.domain.ids import new_id
from terrace.domain.principal import PrincipalKind
from terrace.domain.runner_enrollments import TTL_S, Enrollment, code_hash, new_code
from terrace.domain.tokens import IssuedToken
from terrace.services.access.accounts import AccountService

log = logging.getLogger("terrace.enrollment")
RUNNER_TOKEN_SUBJECT = "#runners"  # not a valid organization name: runner tokens list apart from any org's
REFUSED = "this enrollment code is not valid"  # one answer for every refusal
NOT_BOUND = "this runner's task is not registered yet; retry"


def _key(code: str) -> tuple[str, str]:
    return f"enroll#{code_hash(code)}", "enrollment"


def _enrollment(item: dict[str, Any]) -> Enrollment:
    return Enrollment(
        runner_id=item["runner_id"],
        organization=item["organization"],
        token_id=item["token_id"],
        token_expires_at=int(item["token_expires_at"]),
        expires_at=int(item["expires_at"]),
        binds=bool(item["binds"]),
        bound_to=item.get("bound_to"),
        used=bool(item.get("used")),
    )


class RunnerEnrollments:
    def __init__(self, table: Table, accounts: AccountService, ttl_s: int = TTL_S) -> None:
        self._table, self._accounts, self._ttl_s = table, accounts, ttl_s

    def create(self, runner_id: str, organization: str, token_expires_at: int, *, bound: bool) -> tuple[str, str]:
        """A code for one runner of `organization` (`bound`: good only for the identity `bind` names); returns
        the code and the id its runner's token will have."""
        code, token_id = new_code(), new_id("at")
        pk, sk = _key(code)
        self._table.put(
            {
                "pk": pk,
                "sk": sk,
                "runner_id": runner_id,
                "organization": organization,
                "token_id": token_id,
                "token_expires_at": token_expires_at,
                "expires_at": int(clock.epoch()) + self._ttl_s,
                "binds": bound,
                "version": 1,
            },
            if_absent=True,
        )
        return code, token_id

    def bind(self, code: str, identity: str) -> None:
        """The launcher started the runner as `identity` (an ECS task ARN): only it may use the code."""
        pk, sk = _key(code)
        item = self._table.get(pk, sk)
        if item is None or item.get("bound_to"):
            return
        self._table.put({**item, "bound_to": identity, "version": int(item["version"]) + 1}, if_version=item["version"])

    def cancel(self, code: str) -> None:
        """The runner was never started."""
        self._table.delete(*_key(code))

    def exchange(self, code: str, presented: str | None) -> tuple[Enrollment, IssuedToken]:
        """The runner's token for its code; `presented`: the identity the runner reports (its task ARN)."""
        pk, sk = _key(code)
        item = self._table.get(pk, sk)
        if item is None:
            raise Unauthenticated(REFUSED)
        enrollment = _enrollment(item)
        refusal = enrollment.refusal(presented, clock.epoch())
        if refusal == "not bound yet":
            raise Conflict(NOT_BOUND)
        if refusal is not None:
            log.warning(
                "refused the enrollment of runner %s (%s): %s", enrollment.runner_id, enrollment.organization, refusal
            )
            if enrollment.used:
                self._revoke(enrollment.token_id)
            raise Unauthenticated(REFUSED)
        spent = {  # what a reuse needs (the token to revoke), nothing of its organization: until the code expires
            "pk": pk,
            "sk": sk,
            "runner_id": "",
            "organization": "",
            "token_id": enrollment.token_id,
            "token_expires_at": 0,
            "expires_at": enrollment.expires_at,
            "binds": False,
            "used": True,
            "version": int(item["version"]) + 1,
        }
        try:
            self._table.put(spent, if_version=item["version"])
        except ConditionFailed:
            raise Unauthenticated(REFUSED) from None
        issued = self._accounts.issue_token(
            PrincipalKind.RUNNER,
            RUNNER_TOKEN_SUBJECT,
            description=enrollment.runner_id,
            organization=enrollment.organization,
            expires_epoch=enrollment.token_expires_at,
            token_id=enrollment.token_id,
        )
        return enrollment, issued

    def _revoke(self, token_id: str) -> None:
        try:
            self._accounts.revoke_token(token_id)
        except NotFound:
            pass
