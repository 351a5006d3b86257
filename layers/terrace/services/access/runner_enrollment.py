"""Runner enrollments (`domain/runner_enrollments.py`): the scaler records one per runner it starts, which the
runner exchanges for its token at start. A local runner is given the enrollment's single-use code (privately: its
environment is its user's alone). A runner on ECS is given nothing (what `ecs:DescribeTasks`, the ECS console and
CloudTrail show of a task must not enroll): the launcher names the task it started, and the runner proves it is
that task with an `sts:GetCallerIdentity` request signed by its task role (`domain/runner_identity.py`), which
this server sends to the STS endpoint it trusts (`adapters/caller_identity.py`); a code alone never enrolls a task.

Items (`store_sign_in.py`): one per code, and for a task one naming it (the table's TTL removes both once
expired). The exchange is one conditional write (the item's version): of two
presenters, one wins. A second exchange of a used code (or a second proven enrollment of one task) means someone
else had it: the token it gave is revoked, rather than left working.
"""

from __future__ import annotations

import logging

from terrace.adapters.caller_identity import CallerIdentity
from terrace.domain import clock
from terrace.domain.errors import Conflict, NotFound, Unauthenticated
from terrace.domain.ids import new_id
from terrace.domain.jobs import SignedRequest
from terrace.domain.principal import PrincipalKind
from terrace.domain.runner_enrollments import TTL_S, Enrollment, new_code
from terrace.domain.runner_identity import ProofRefused, check_caller, vet
from terrace.domain.tokens import IssuedToken
from terrace.services.access.accounts import AccountService
from terrace.services.access.store_accounts import RUNNER_TOKEN_SUBJECT
from terrace.services.access.store_sign_in import SignInStore, StoredEnrollment

__all__ = ["RUNNER_TOKEN_SUBJECT", "RunnerEnrollments", "RunnerIdentity"]
log = logging.getLogger("terrace.enrollment")
REFUSED = "this enrollment code is not valid"  # one answer for every refusal
NOT_BOUND = "this runner's task is not registered yet; retry"


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
        self, store: SignInStore, accounts: AccountService, ttl_s: int = TTL_S, identity: RunnerIdentity | None = None
    ) -> None:
        self._store, self._accounts, self._ttl_s, self._identity = store, accounts, ttl_s, identity

    def create(self, runner_id: str, organization: str, token_expires_at: int, *, bound: bool) -> tuple[str, str]:
        """A code for one runner of `organization` (`bound`: good only for the identity `bind` names); returns
        the code and the id its runner's token will have."""
        code, token_id = new_code(), new_id("at")
        expires_at = int(clock.epoch()) + self._ttl_s
        self._store.create_enrollment(code, Enrollment(runner_id, organization, token_id, token_expires_at,
                                                       expires_at, bound))  # fmt: skip
        return code, token_id

    def bind(self, code: str, identity: str) -> None:
        """The launcher started the runner as `identity` (an ECS task ARN): only it may use the code."""
        self._store.bind_enrollment(code, identity)

    def cancel(self, code: str) -> None:
        """The runner was never started."""
        self._store.cancel_enrollment(code)

    def exchange(self, code: str) -> tuple[Enrollment, IssuedToken]:
        """A local runner's token for its code (never a task's: its code proves nothing of who presents it)."""
        stored = self._store.enrollment(code)
        if stored is None:
            raise Unauthenticated(REFUSED)
        return self._spend(stored, stored.enrollment.refusal(clock.epoch()))

    def exchange_proven(self, task_arn: str, proof: SignedRequest) -> tuple[Enrollment, IssuedToken]:
        """A runner task's token, for a proof that it is that task (`RunnerIdentity.prove`)."""
        if self._identity is None:
            log.warning("refused the enrollment of task %s: this server checks no runner identity", task_arn)
            raise Unauthenticated(REFUSED)
        pointer = self._store.task_pointer(task_arn)
        if pointer is None:
            raise Conflict(NOT_BOUND)  # the task ARN is not secret: telling it is not registered yet tells nothing
        stored = self._store.enrollment_at(pointer)
        if stored is None:
            raise Unauthenticated(REFUSED)
        try:
            self._identity.prove(task_arn, proof)
        except ProofRefused as exc:  # a refused proof changes nothing: anyone may name a task
            log.warning("refused the enrollment of task %s: %s", task_arn, exc)
            raise Unauthenticated(REFUSED) from None
        return self._spend(stored, stored.enrollment.proven_refusal(task_arn, clock.epoch()))

    def _spend(self, stored: StoredEnrollment, refusal: str | None) -> tuple[Enrollment, IssuedToken]:
        enrollment = stored.enrollment
        if refusal is not None:
            log.warning(
                "refused the enrollment of runner %s (%s): %s", enrollment.runner_id, enrollment.organization, refusal
            )
            if enrollment.used:
                self._revoke(enrollment.token_id)
            raise Unauthenticated(REFUSED)
        if not self._store.spend_enrollment(stored):  # of two presenters, one wins
            raise Unauthenticated(REFUSED)
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
