"""Storage of what signing in leaves behind (part of the access store, `store.py`): web sessions, `terraform login`
codes, OpenID Connect sign-ins in flight and the links of (issuer, subject) to users, the teams single sign-on put a
user in, and runners' enrollments. Every secret is keyed by its SHA-256 only; the short-lived ones carry the
table's TTL attribute `expires_at`.

Items: `websession#<sha256 of the id>`/`session` (listed under gsi1 `<user>#websessions`), `oauthcode#<sha256>`/
`code`, `oidcstate#<sha256>`/`state`, `oidcsub#<sha256 of issuer and subject>`/`link`, `<user>`/`ssoteams`,
`enroll#<sha256 of the code>`/`enrollment` and for a task `enroll-task#<task ARN>`/`enrollment`."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from terrace.adapters.table import ConditionFailed, Table
from terrace.domain.runner_enrollments import Enrollment, code_hash

UNSPENT = 1  # the version of a single-use item (a code, a sign-in's state): deleted only from it


def session_key(session_id: str) -> tuple[str, str]:
    return f"websession#{hashlib.sha256(session_id.encode()).hexdigest()}", "session"


def sessions_index(user_id: str) -> str:
    return f"{user_id}#websessions"


def login_code_key(code: str) -> tuple[str, str]:
    return f"oauthcode#{hashlib.sha256(code.encode()).hexdigest()}", "code"


def oidc_state_key(state: str) -> tuple[str, str]:
    return f"oidcstate#{hashlib.sha256(state.encode()).hexdigest()}", "state"


def oidc_link_key(issuer: str, subject: str) -> tuple[str, str]:
    return f"oidcsub#{hashlib.sha256(f'{issuer} {subject}'.encode()).hexdigest()}", "link"


def sso_record_key(user_id: str) -> tuple[str, str]:
    return user_id, "ssoteams"


def enrollment_key(code: str) -> tuple[str, str]:
    return f"enroll#{code_hash(code)}", "enrollment"


def task_enrollment_key(task_arn: str) -> tuple[str, str]:
    return f"enroll-task#{task_arn}", "enrollment"


def enrollment_from_item(item: dict[str, Any]) -> Enrollment:
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


@dataclass(frozen=True)
class StoredEnrollment:
    enrollment: Enrollment
    pk: str  # its key: `enroll#<sha256 of the code>`
    version: int


def _stored(item: dict[str, Any]) -> StoredEnrollment:
    return StoredEnrollment(enrollment_from_item(item), item["pk"], int(item["version"]))


class SignInStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    # web sessions --------------------------------------------------------------------------
    def start_session(self, session_id: str, record: dict[str, Any]) -> None:
        """A new session: `record` holds subject_id, csrf, expires_at and token_id/token_hash or issuer."""
        pk, sk = session_key(session_id)
        expires_at = record["expires_at"]
        item = {"pk": pk, "sk": sk, "subject_id": record["subject_id"], "csrf": record["csrf"],
                "expires_at": expires_at,  # also the table's TTL attribute
                "gsi1pk": sessions_index(record["subject_id"]), "gsi1sk": f"{expires_at:012d}#{pk}"}  # fmt: skip
        item.update({k: v for k, v in record.items() if k in ("token_id", "token_hash", "issuer")})
        self._table.put(item, if_absent=True)

    def session(self, session_id: str) -> dict[str, Any] | None:
        """The session's record (subject_id, csrf, expires_at, token_id/token_hash or issuer), or None."""
        return self._table.get(*session_key(session_id))

    def end_session(self, session_id: str) -> None:
        self._table.delete(*session_key(session_id))

    def end_sessions(self, user_id: str) -> int:
        """Delete every web session of a user (suspended, site-admin right revoked, deleted); returns how many."""
        keys = [(item["pk"], item["sk"]) for item in self._table.query(sessions_index(user_id), index="gsi1")]
        if keys:
            self._table.batch_delete(keys)
        return len(keys)

    # single-use codes and states ------------------------------------------------------------
    def put_login_code(self, code: str, record: dict[str, Any]) -> None:
        """A `terraform login` code: user_id, challenge, redirect_uri, expires_at."""
        pk, sk = login_code_key(code)
        self._table.put({"pk": pk, "sk": sk, **record, "version": UNSPENT}, if_absent=True)

    def spend_login_code(self, code: str) -> dict[str, Any] | None:
        """The code's record, deleted first (of two spenders one gets it); None when unknown or spent."""
        item = self._table.get(*login_code_key(code))
        try:
            self._table.delete(*login_code_key(code), if_version=UNSPENT)
        except ConditionFailed:
            return None
        return item

    def put_oidc_state(self, state: str, record: dict[str, Any]) -> None:
        """A sign-in in flight: nonce, verifier, browser (a hash), next, expires_at."""
        pk, sk = oidc_state_key(state)
        self._table.put({"pk": pk, "sk": sk, **record, "version": UNSPENT}, if_absent=True)

    def oidc_state(self, state: str) -> dict[str, Any] | None:
        return self._table.get(*oidc_state_key(state))

    def spend_oidc_state(self, state: str) -> bool:
        """Delete the state unless someone else did first (False then)."""
        try:
            self._table.delete(*oidc_state_key(state), if_version=UNSPENT)
        except ConditionFailed:
            return False
        return True

    def oidc_link(self, issuer: str, subject: str) -> dict[str, Any] | None:
        """The link of (issuer, subject): user_id, groups, signed_in_at, version (None on older links)."""
        return self._table.get(*oidc_link_key(issuer, subject))

    def put_oidc_link(
        self,
        issuer: str,
        subject: str,
        record: dict[str, Any],
        read: dict[str, Any] | None,
        lost: Callable[[], object] | None = None,
    ) -> None:
        """Write the link over the one read (absent: a first link); when another sign-in wrote it meanwhile, `lost`
        is called and ConditionFailed raised (look again). A link from before links had versions is replaced
        unconditionally, once."""
        pk, sk = oidc_link_key(issuer, subject)
        item = {"pk": pk, "sk": sk, "issuer": issuer, "subject": subject, **record,
                "version": (read or {}).get("version", 0) + 1}  # fmt: skip
        try:
            self._table.put(item, if_absent=read is None, if_version=None if read is None else read.get("version"))
        except ConditionFailed:
            if lost is not None:
                lost()
            raise

    # single sign-on's teams -------------------------------------------------------------------
    def sso_team_ids(self, user_id: str) -> set[str]:
        """The teams single sign-on put the user in at their last sign-in."""
        return set((self._table.get(*sso_record_key(user_id)) or {}).get("team_ids", []))

    def set_sso_team_ids(self, user_id: str, team_ids: list[str]) -> None:
        pk, sk = sso_record_key(user_id)
        self._table.put({"pk": pk, "sk": sk, "team_ids": team_ids})

    # runner enrollments -----------------------------------------------------------------------
    def create_enrollment(self, code: str, enrollment: Enrollment) -> None:
        pk, sk = enrollment_key(code)
        self._table.put(
            {
                "pk": pk,
                "sk": sk,
                "runner_id": enrollment.runner_id,
                "organization": enrollment.organization,
                "token_id": enrollment.token_id,
                "token_expires_at": enrollment.token_expires_at,
                "expires_at": enrollment.expires_at,
                "binds": enrollment.binds,
                "version": 1,
            },
            if_absent=True,
        )

    def bind_enrollment(self, code: str, identity: str) -> None:
        """Bind the code's enrollment to `identity` (once), with a pointer from the identity to it."""
        pk, sk = enrollment_key(code)
        item = self._table.get(pk, sk)
        if item is None or item.get("bound_to"):
            return
        task_pk, task_sk = task_enrollment_key(identity)
        self._table.put({"pk": task_pk, "sk": task_sk, "enrollment": pk, "expires_at": item["expires_at"]})
        self._table.put({**item, "bound_to": identity, "version": int(item["version"]) + 1}, if_version=item["version"])

    def cancel_enrollment(self, code: str) -> None:
        self._table.delete(*enrollment_key(code))

    def enrollment(self, code: str) -> StoredEnrollment | None:
        item = self._table.get(*enrollment_key(code))
        return _stored(item) if item else None

    def task_pointer(self, task_arn: str) -> str | None:
        """The key of the enrollment bound to the task, or None (not bound yet)."""
        pointer = self._table.get(*task_enrollment_key(task_arn))
        return str(pointer["enrollment"]) if pointer else None

    def enrollment_at(self, pk: str) -> StoredEnrollment | None:
        item = self._table.get(pk, "enrollment")
        return _stored(item) if item else None

    def spend_enrollment(self, stored: StoredEnrollment) -> bool:
        """Mark it used over the version read, keeping what a reuse needs (the token to revoke) and nothing of its
        organization, until the code expires; False when another presenter spent it first."""
        enrollment, version = stored.enrollment, stored.version
        spent = {
            "pk": stored.pk,
            "sk": "enrollment",
            "runner_id": "",
            "organization": "",
            "token_id": enrollment.token_id,
            "token_expires_at": 0,
            "expires_at": enrollment.expires_at,
            "binds": False,
            "used": True,
            "version": version + 1,
        }
        try:
            self._table.put(spent, if_version=version)
        except ConditionFailed:
            return False
        return True
