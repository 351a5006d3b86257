"""The installation's admin settings (TFE's `/api/v2/admin/*-settings`), read and changed by the site admin only
(`Authorizer.require_site_admin`: to anyone else they do not exist), and read by the behaviour they govern:

- SMTP: `smtp_server()` is where every e-mail goes when enabled (`adapters/site_mail.py`); an update naming a
  `test-email-address` sends it a message through the new server first and is refused if that fails.
- general: `limit-user-organization-creation` (only site admins create organizations), `default-remote-state-access`
  (a new workspace's `global-remote-state`), the run timeouts (`run_timeouts_s`).
- OIDC: `rotate_key` / `trim_key` rotate the workload identity issuer's signing keys (`/.well-known/jwks`).
- customization: the web UI's support address, login help and footer (`customization()`).
- SCIM: enabling it needs SAML enabled with a provider type (as TFE); the site admin group must be a SCIM group.

Secrets (the SMTP password, the Twilio token, the SAML private key, the cost-estimation keys) are write-only:
sealed by the encryptor port under their section and name, never in an answer or a log."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from terrace.adapters.encryptor import Encryptor
from terrace.adapters.mail import MailResult, SmtpServer
from terrace.domain import admin_settings as model
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal
from terrace.services.access.authz import Authorizer
from terrace.services.access.workload_issuer import WorkloadIssuer
from terrace.services.admin.store_scim import ScimStore
from terrace.services.admin.store_settings import AdminSettingsStore
from terrace.services.optimistic import optimistic

log = logging.getLogger("terrace.admin")
TEST_RESULT = "test-email"  # a key of update's answer for the route's meta, never a setting
CACHE_S = 2.0  # other processes (Lambdas) see a change this late at most
TestMail = Callable[[SmtpServer, str], MailResult]


class AdminSettings:
    def __init__(
        self,
        authz: Authorizer,
        store: AdminSettingsStore,
        encryptor: Encryptor,
        issuer: WorkloadIssuer,
        scim: ScimStore,
        test_mail: TestMail,
    ) -> None:
        self._authz, self._store, self._encryptor = authz, store, encryptor
        self._issuer, self._scim, self._test_mail = issuer, scim, test_mail
        self._cache: dict[str, tuple[float, dict[str, Any]]] = {}  # what the behaviour reads, for CACHE_S

    # the admin API -------------------------------------------------------------------------------------------
    def read(self, principal: Principal, section: str) -> dict[str, Any]:
        self._authz.require_site_admin(principal)
        return self._shown(section, self.current(section))

    def update(self, principal: Principal, section: str, attrs: dict[str, Any]) -> dict[str, Any]:
        self._authz.require_site_admin(principal)
        if section not in model.SECTIONS:
            raise NotFound(f"no {section} settings")

        def step() -> dict[str, Any]:
            stored, sealed, version = self._store.read(section)
            secrets = {key: self._open(section, key, value) for key, value in sealed.items()}
            values = model.checked(section, {**stored, **secrets}, attrs)
            self._check(section, values, attrs)
            hidden = model.SECRETS.get(section, frozenset())
            public = {k: v for k, v in values.items() if k not in hidden}
            new_sealed = {k: self._seal(section, k, values[k]) for k in hidden if values.get(k)}
            self._store.write(section, public, new_sealed, version)
            self._cache.pop(section, None)
            return values

        values = optimistic(step, exhausted="the settings changed concurrently; retry")
        shown = self._shown(section, values)
        if section == "smtp" and values["enabled"] and attrs.get("test-email-address"):
            shown[TEST_RESULT] = self._send_test(values, str(attrs["test-email-address"]))
        return shown

    def _send_test(self, values: dict[str, Any], address: str) -> dict[str, Any]:
        """The test message of an SMTP update, sent once the settings are stored (as TFE: a server that cannot be
        reached does not refuse them); its outcome is in the answer's meta (`test-email`)."""
        result = self._test_mail(_server(values, values.get("password", "")), address)
        if not result.ok:
            log.warning("the SMTP settings' test e-mail was not sent: %s", result.detail)
        return {"sent": result.ok, "detail": result.detail}

    def disable_scim(self, principal: Principal) -> None:
        """SCIM off (its tokens, groups and mappings are the SCIM service's to forget)."""
        self.update(principal, "scim", {"enabled": False, "paused": False, "site-admin-group-scim-id": None})

    def revoke_old_idp_cert(self, principal: Principal) -> dict[str, Any]:
        self._authz.require_site_admin(principal)

        def step() -> dict[str, Any]:
            stored, sealed, version = self._store.read("saml")
            self._store.write("saml", {**stored, "old-idp-cert": ""}, sealed, version)
            self._cache.pop("saml", None)
            return {**model.defaults("saml"), **stored, "old-idp-cert": ""}

        return self._shown("saml", optimistic(step, exhausted="the settings changed concurrently; retry"))

    def rotate_key(self, principal: Principal) -> None:
        """A new workload identity signing key, published at once (the current ones retire after their tokens)."""
        self._authz.require_site_admin(principal)
        self._issuer.rotate()

    def trim_key(self, principal: Principal) -> None:
        """Only the newest signing key remains, signing from now on: tokens of the others stop verifying."""
        self._authz.require_site_admin(principal)
        self._issuer.trim()

    # what the behaviour reads (no caller: the settings govern the installation) ---------------------------------
    def current(self, section: str) -> dict[str, Any]:
        """The section's values as the behaviour reads them: at most CACHE_S old (this process's own changes at
        once), so a request path that consults a setting costs no read on most requests."""
        if section not in model.SECTIONS:
            raise NotFound(f"no {section} settings")
        cached = self._cache.get(section)
        if cached is not None and time.monotonic() - cached[0] < CACHE_S:
            return cached[1]
        stored, _sealed, _version = self._store.read(section)
        values = {**model.defaults(section), **stored}
        self._cache[section] = (time.monotonic(), values)
        return values

    def smtp_server(self) -> SmtpServer | None:
        """The SMTP server every e-mail goes through, when the site admin enabled one."""
        stored, sealed, _version = self._store.read("smtp")
        values = {**model.defaults("smtp"), **stored}
        if not values["enabled"] or not values["host"]:
            return None
        password = self._open("smtp", "password", sealed["password"]) if sealed.get("password") else ""
        return _server(values, password)

    def customization(self) -> dict[str, Any]:
        return self.current("customization")

    def limits_organization_creation(self) -> bool:
        return bool(self.current("general")["limit-user-organization-creation"])

    def phase_timeout_s(self, phase: str) -> int | None:
        """The admin's `plan-timeout` / `apply-timeout` in seconds (None: not set)."""
        value = self.current("general")[f"{phase}-timeout"]
        return model.seconds(value) if value else None

    def default_remote_state_access(self) -> bool:
        return bool(self.current("general")["default-remote-state-access"])

    def scim_state(self) -> dict[str, Any]:
        return self.current("scim")

    # helpers --------------------------------------------------------------------------------------------------
    def _check(self, section: str, values: dict[str, Any], attrs: dict[str, Any]) -> None:
        if section == "scim":
            saml = self.current("saml")
            if (
                values["enabled"]
                and attrs.get("enabled")
                and not (saml["enabled"] and saml["provider-type"] != "unknown")
            ):
                raise Invalid("SCIM needs SAML enabled with a provider type", pointer="/data/attributes/enabled")
            group_id = values["site-admin-group-scim-id"]
            if group_id and self._scim.get("group", group_id) is None:
                raise Invalid(f"no SCIM group {group_id}", pointer="/data/attributes/site-admin-group-scim-id")
        if section == "smtp" and attrs.get("test-email-address") is not None:
            model.checked("customization", {}, {"support-email-address": attrs["test-email-address"]})

    def _shown(self, section: str, values: dict[str, Any]) -> dict[str, Any]:
        shown = model.public(section, values)
        if section == "scim":
            group = (
                self._scim.get("group", shown["site-admin-group-scim-id"])
                if shown["site-admin-group-scim-id"]
                else None
            )
            shown["site-admin-group-display-name"] = group["display_name"] if group else ""
        return shown

    def _seal(self, section: str, key: str, value: str) -> str:
        return self._encryptor.encrypt(value, {"purpose": "admin-settings", "setting": f"{section}.{key}"})

    def _open(self, section: str, key: str, sealed: str) -> str:
        return self._encryptor.decrypt(sealed, {"purpose": "admin-settings", "setting": f"{section}.{key}"})


def _server(values: dict[str, Any], password: str) -> SmtpServer:
    return SmtpServer(
        host=values["host"],
        port=int(values["port"]),
        sender=values["sender"] or "terrace@localhost",
        auth=values["auth"],
        username=values["username"],
        password=password,
    )
