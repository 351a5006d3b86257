"""SCIM users (`/scim/v2/Users`): an identity provider provisions Terrace users.

A new SCIM user becomes a Terrace user (its username from the userName, made unique; its e-mail the primary
address) or takes over the unprovisioned account that already has that address. Deprovisioning — `active` set
false (PUT or PATCH, as Okta and Entra ID send it) or DELETE — acts at once: the user leaves every team and
organization, every token of theirs is revoked, their web sessions end and the account is suspended (kept, so
what they did keeps its author). `active` true again lifts the suspension; their groups put them back in teams.
Every call is refused while SCIM is disabled, every change while it is paused (`AdminSettings`)."""

from __future__ import annotations

import builtins
import re
import secrets
from collections.abc import Callable
from typing import Any

from terrace.domain import clock
from terrace.domain import scim as model
from terrace.domain.errors import Conflict, Forbidden, NotFound
from terrace.domain.ids import new_id
from terrace.services.access.accounts import AccountService
from terrace.services.access.memberships import MembershipService
from terrace.services.access.users import UserService
from terrace.services.admin.settings import AdminSettings
from terrace.services.admin.store_scim import ScimStore
from terrace.services.optimistic import optimistic

Resync = Callable[[str], None]  # a SCIM user id whose groups' teams must be brought up to date


def require_enabled(settings: AdminSettings, change: bool) -> None:
    state = settings.scim_state()
    if not state["enabled"]:
        raise Forbidden("SCIM provisioning is disabled")
    if change and state["paused"]:
        raise Conflict("SCIM provisioning is paused")


class ScimUsers:
    def __init__(
        self,
        store: ScimStore,
        settings: AdminSettings,
        accounts: AccountService,
        users: UserService,
        memberships: MembershipService,
        public_url: str,
        resync: Resync,
    ) -> None:
        self._store, self._settings, self._accounts = store, settings, accounts
        self._users, self._memberships, self._url = users, memberships, public_url.rstrip("/")
        self._resync = resync

    # reads ---------------------------------------------------------------------------------------------------
    def get(self, scim_id: str) -> dict[str, Any]:
        require_enabled(self._settings, change=False)
        return self.shown(self._load(scim_id))

    def list(self, filter_text: str | None, start: str | None, count: str | None) -> dict[str, Any]:
        require_enabled(self._settings, change=False)
        if filter_text:
            model.parse_filter(filter_text)  # a bad filter is refused even when nothing is stored
        found = [shown for r in self._store.list("user") if model.matches(shown := self.shown(r), filter_text)]
        items, first, _size = model.page(found, start, count)
        return model.list_response(items, len(found), first)

    # changes -------------------------------------------------------------------------------------------------
    def create(self, body: Any) -> dict[str, Any]:
        require_enabled(self._settings, change=True)
        attrs = _attributes(body)
        if self._store.by_name("user", attrs["userName"]) is not None:
            raise Conflict(f"userName {attrs['userName']!r} is taken")
        now = clock.now_iso()
        user_id = self._account_for(attrs)
        record = {"id": new_id("scimu"), "user_id": user_id, "user_name": attrs["userName"], "attributes": attrs,
                  "created_at": now, "updated_at": now}  # fmt: skip
        self._store.create("user", record)
        self._users.set_scim(user_id, attrs["userName"], now)
        if not attrs.get("active", True):
            self._deprovision(user_id)
        return self.shown({**record, "version": 1})

    def replace(self, scim_id: str, body: Any) -> dict[str, Any]:
        return self._change(scim_id, lambda _current: _attributes(body))

    def patch(self, scim_id: str, body: Any) -> dict[str, Any]:
        return self._change(scim_id, lambda current: _attributes(model.apply_patch(current, body)))

    def delete(self, scim_id: str) -> None:
        require_enabled(self._settings, change=True)
        record = self._load(scim_id)
        self._deprovision(record["user_id"])
        self._store.delete("user", record)
        self._users.set_scim(record["user_id"], "", "")

    def user_ids(self, scim_ids: builtins.list[str]) -> dict[str, tuple[str, bool]]:
        """SCIM user id -> (Terrace user id, active) for the ones that exist."""
        found = {}
        for scim_id in scim_ids:
            record = self._store.get("user", scim_id)
            if record is not None:
                found[scim_id] = (record["user_id"], bool(record["attributes"].get("active", True)))
        return found

    def shown(self, record: dict[str, Any]) -> dict[str, Any]:
        return {
            "schemas": [model.USER],
            "id": record["id"],
            **record["attributes"],
            "meta": {"resourceType": "User", "created": record["created_at"], "lastModified": record["updated_at"],
                     "location": f"{self._url}/scim/v2/Users/{record['id']}", "version": f'W/"{record["version"]}"'},
        }  # fmt: skip

    # helpers -------------------------------------------------------------------------------------------------
    def _change(self, scim_id: str, decide: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        require_enabled(self._settings, change=True)
        was_active = True

        def step() -> dict[str, Any]:
            nonlocal was_active
            record = self._load(scim_id)
            was_active = bool(record["attributes"].get("active", True))
            attrs = decide(self.shown(record))
            changed = {**record, "user_name": attrs["userName"], "attributes": attrs, "updated_at": clock.now_iso()}
            return self._store.replace("user", changed, record["user_name"])

        written = optimistic(step, exhausted="the SCIM user changed concurrently; retry")
        self._users.set_scim(written["user_id"], written["user_name"], written["updated_at"])
        active = bool(written["attributes"].get("active", True))
        if was_active and not active:
            self._deprovision(written["user_id"])
        elif active and not was_active:
            self._users.set_flags(written["user_id"], suspended=False)
            self._resync(written["id"])
        return self.shown(written)

    def _load(self, scim_id: str) -> dict[str, Any]:
        record = self._store.get("user", scim_id) if isinstance(scim_id, str) else None
        if record is None:
            raise NotFound(f"no SCIM user {scim_id}")
        return record

    def _account_for(self, attrs: dict[str, Any]) -> str:
        """The Terrace user a new SCIM user provisions: the unprovisioned account with its e-mail, else a new one."""
        email = _primary_email(attrs)
        existing = self._accounts.user_id_by_email(email) if email else None
        if existing is not None and self._store.scim_id_of_user(existing) is None:
            self._users.set_flags(existing, suspended=False)
            return existing
        local = re.sub(r"[^A-Za-z0-9_-]", "-", attrs["userName"].split("@")[0])[:40].strip("-") or "user"
        user = self._accounts.create_user(f"{local}-{secrets.token_hex(3)}", email)
        if email and existing is None:
            self._accounts.claim_email(email, user.id)
        return user.id

    def _deprovision(self, user_id: str) -> None:
        """At once: suspended, every session ended, every token revoked, out of every team and organization.
        The suspension comes first: from then on none of their tokens or sessions is accepted and no token can be
        issued to them, so nothing they start while the rest is undone outlives it."""
        self._users.set_flags(user_id, suspended=True)  # also ends the web sessions
        for token in self._accounts.list_tokens(user_id):
            self._accounts.revoke_token(token.id)
        self._memberships.remove_everywhere(user_id)


def _primary_email(attrs: dict[str, Any]) -> str:
    emails = [e for e in attrs.get("emails") or [] if isinstance(e, dict) and isinstance(e.get("value"), str)]
    chosen = next((e["value"] for e in emails if e.get("primary")), emails[0]["value"] if emails else "")
    name = attrs["userName"]
    return str(chosen or (name if "@" in name else ""))[:254]


def _attributes(body: Any) -> dict[str, Any]:
    """The SCIM attributes Terrace keeps of a user, checked (userName is required)."""
    body = model.bounded(body)
    attrs = {key: value for key in model.USER_ATTRIBUTES if (value := model.attribute(body, key)) is not None}
    if model.ENTERPRISE in body:
        attrs[model.ENTERPRISE] = body[model.ENTERPRISE]
    name = attrs.get("userName")
    if not isinstance(name, str) or not name.strip() or len(name) > 256:
        raise model.InvalidValue("userName is required (at most 256 characters)")
    if "active" in attrs:
        attrs["active"] = model.boolean(attrs["active"], "active")
    if "emails" in attrs and not isinstance(attrs["emails"], list):
        raise model.InvalidValue("emails must be a list")
    for email in attrs.get("emails") or []:  # Entra ID sends `"primary": "True"`
        if isinstance(email, dict) and "primary" in email:
            email["primary"] = model.boolean(email["primary"], "emails.primary")
    return attrs
