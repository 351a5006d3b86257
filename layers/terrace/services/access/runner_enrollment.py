"""Runner enrollments (`domain/runner_enrollments.py`): the scaler records one per runner it starts, which the
runner exchanges for its token at start. A local runner is given the enrollment's single-use code (privately: its
environment is its user's alone). A runner on ECS is given nothing (what `ecs:DescribeTasks`, the ECS console and
CloudTrail show of a task must not enroll): the launcher names the task it started, and the runner proves it is
that task with an `sts:GetCallerIdentity` request signed by its task role (`domain/runner_identity.py`), which
this server sends to the STS endpoint it trusts (`adapters/caller_identity.py`); a code alone never enrolls a task.

Items: `enroll#<sha256 of the code>` / `enrollment`, and for a task `enroll-task#<task ARN>` / `enrollment` naming
it (the table's TTL removes both once expired). The exchange is one conditional write (the item's version): of two
presenters, one wins. A second exchange of a used code (or a second proven enrollment of one task) means someone
else had it: the token it gave is revoked, rather than left working.
"""

from __future__ import annotations

import logging
from typing import Any

from terrace.adapters.caller_identity import CallerIdentity
from terrace.adapters.table import ConditionFailed, Table
from terrace.domain import clock
from terrace.domain.errors import Conflict, NotFound, Unauthenticated
from terrace.domain.ids import new_id
from terrace.domain.jobs import SignedRequest
from terrace.domain.principal import PrincipalKind
from terrace.domain.runner_enrollments import TTL_S, Enrollment, code_hash, new_code
from terrace.domain.runner_identity import ProofRefused, check_caller, vet
from terrace.domain.tokens import IssuedToken
from terrace.services.access.accounts import AccountService

log = logging.getLogger("terrace.enrollment")
RUNNER_TOKEN_SUBJECT = "#runners"  # not a valid organization name: runner tokens list apart from any org's
REFUSED = "this enrollment code is not valid"  # one answer for every refusal
NOT_BOUND = "this runner's task is not registered yet; retry"


def _key(code: str) -> tuple[str, str]:
    return f"enroll#{code_hash(code)}", "enrollment"


def _task_key(task_arn: str) -> tuple[str, str]:
    return f"enroll-task#{task_arn}", "enrollment"


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


class RunnerIdentity:
    """How this server checks a runner task's proof: the STS endpoint it trusts, its own id (the header a proof
    must carry signed: its public URL) and the runner tasks' role."""

    def __init__(self, sts: CallerIdentity, server_id: str, role_arn: str) -> None:
        self.sts, self.server_id, self.role_arn = sts, server_id, role_arn

    def prove(self, task_arn: str, proof: SignedRequest) -> None:
        """ProofRefused unless `proof` is a GetCallerIdentity signed by the runner role's session of `task_arn`."""
        headers = vet(
            proof.method, proof.url, proof.headers, proof.body,
            trusted_url=self.sts.url, server_id=self.server_id, now=clock.epoch(),
        )  # fmt: skip
        arn = self.sts.caller_arn(headers, proof.body)
        if arn is None:
            raise ProofRefused("STS refused the signature")
        check_caller(arn, role_arn=self.role_arn, task_arn=task_arn)


class RunnerEnrollments:
    def __init__(
        self, table: Table, accounts: AccountService, ttl_s: int = TTL_S, identity: RunnerIdentity | None = None
    ) -> None:
        self._table, self._accounts, self._ttl_s, self._identity = table, accounts, ttl_s, identity

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
        task_pk, task_sk = _task_key(identity)
        self._table.put({"pk": task_pk, "sk": task_sk, "enrollment": pk, "expires_at": item["expires_at"]})
        self._table.put({**item, "bound_to": identity, "version": int(item["version"]) + 1}, if_version=item["version"])

    def cancel(self, code: str) -> None:
        """The runner was never started."""
        self._table.delete(*_key(code))

    def exchange(self, code: str) -> tuple[Enrollment, IssuedToken]:
        """A local runner's token for its code (never a task's: its code proves nothing of who presents it)."""
        pk, sk = _key(code)
        item = self._table.get(pk, sk)
        if item is None:
            raise Unauthenticated(REFUSED)
        return self._spend(item, _enrollment(item).refusal(clock.epoch()))

    def exchange_proven(self, task_arn: str, proof: SignedRequest) -> tuple[Enrollment, IssuedToken]:
        """A runner task's token, for a proof that it is that task (`RunnerIdentity.prove`)."""
        if self._identity is None:
            log.warning("refused the enrollment of task %s: this server checks no runner identity", task_arn)
            raise Unauthenticated(REFUSED)
        pointer = self._table.get(*_task_key(task_arn))
        if pointer is None:
            raise Conflict(NOT_BOUND)  # the task ARN is not secret: telling it is not registered yet tells nothing
        item = self._table.get(pointer["enrollment"], "enrollment")
        if item is None:
            raise Unauthenticated(REFUSED)
        try:
            self._identity.prove(task_arn, proof)
        except ProofRefused as exc:  # a refused proof changes nothing: anyone may name a task
            log.warning("refused the enrollment of task %s: %s", task_arn, exc)
            raise Unauthenticated(REFUSED) from None
        return self._spend(item, _enrollment(item).proven_refusal(task_arn, clock.epoch()))

    def _spend(self, item: dict[str, Any], refusal: str | None) -> tuple[Enrollment, IssuedToken]:
        pk, sk = item["pk"], item["sk"]
        enrollment = _enrollment(item)
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
