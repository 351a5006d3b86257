"""Organization memberships: what lets a user see an organization at all. Removing a membership takes the
user out of every team of the organization (never the last owner).

Nobody joins without consent: a membership is `invited` until its user accepts it (`accept`), and only an
`active` one counts for permissions (`grants.py`). An invitation by e-mail (HCP Terraform's) is listed with
the address the inviter typed; an invitation of an existing account by its username (`invite_user`) is seen
by nobody in the organization until accepted, and answers the same whether the username exists or not."""

from __future__ import annotations

import builtins
import logging
import re
import secrets
from typing import Any

from terrace.adapters.mail import Mail
from terrace.domain import clock, limits
from terrace.domain.errors import Conflict, Invalid, NotFound, TooManyRequests
from terrace.domain.ids import looks_like
from terrace.domain.memberships import STATUSES, Membership, check_email
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.users import User
from terrace.services.access import grants
from terrace.services.access.accounts import AccountService
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.store_teams import TeamStore
from terrace.services.access.teams import TeamService
from terrace.services.optimistic import optimistic

log = logging.getLogger("terrace.access")
INVITATION_TIMEOUT_S = 10.0


class MembershipService:
    def __init__(
        self,
        store: TeamStore,
        organizations: OrganizationService,
        accounts: AccountService,
        teams: TeamService,
        *,
        mail: Mail | None = None,
        public_url: str = "",
    ) -> None:
        self._mail, self._public_url = mail, public_url.rstrip("/")
        self._store = store
        self._orgs = organizations
        self._accounts = accounts
        self._teams = teams

    def invite(self, principal: Principal, organization: str, email: Any) -> Membership:
        """Invite someone by e-mail address: an `invited` membership of the account that address was invited
        with before, else of a new one (at most `limits.PENDING_INVITATIONS_MAX` pending per organization)."""
        org = self._teams.organization(principal, organization, Action.MANAGE_MEMBERSHIP)
        address = check_email(email)
        user = self._user_by_email(address)
        if user is None or self._store.membership(org.key, user.id) is None:
            self._check_pending(org)
            self._count_invitation(principal)
        if user is None:
            local = re.sub(r"[^A-Za-z0-9_-]", "-", address.split("@")[0])[:40].strip("-") or "user"
            user = self._accounts.create_user(f"{local}-{secrets.token_hex(3)}", address)
            self._accounts.claim_email(address, user.id)
        member = self.ensure(org.key, user, "invited", must_be_new=True, who=address)
        self._send_invitation(address, org.name, principal.username)
        return member

    def invite_into_teams(self, principal: Principal, organization: str, email: Any, team_ids: list[str]) -> Membership:
        """Invite by e-mail address (`invite`) into teams of the organization, each checked first (another
        organization's team is as absent as an unknown one): the new member is in them from the start."""
        teams = [self._teams.get(principal, team_id, Action.MANAGE_MEMBERSHIP) for team_id in team_ids]
        if any(team.organization != self._orgs.lookup(organization).key for team in teams):
            raise NotFound("team not found")
        member = self.invite(principal, organization, email)
        for team in teams:
            self._teams.set_members(principal, team, set(team.users) | {member.user_id})
        return member

    def invite_user(self, principal: Principal, organization: str, username: str) -> None:
        """Invite an existing account by its username (or id). Nothing tells whether it exists: the invitation
        is the invitee's to see (`own`) and accept, and nobody in the organization sees it before."""
        org = self._teams.organization(principal, organization, Action.MANAGE_MEMBERSHIP)
        self._check_pending(org)  # before the name is looked up: the same answer whether it exists or not
        self._count_invitation(principal)
        user = self._accounts.find_user(username) or self._user_by_id(username)
        if user is None or self._store.membership(org.key, user.id) is not None:
            return
        if self._store.add_membership(org.key, user.id, "", "invited", hidden=True) is None:
            return  # invited (or joined) meanwhile
        grants.forget()

    def accept(self, principal: Principal, membership_id: str) -> Membership:
        """The invitee accepts an invitation: the membership becomes active (and visible with their e-mail)."""
        member = self._own(principal, membership_id)
        if member.status == "active":
            return member
        user = self._accounts.get_user(member.user_id)
        accepted = self._store.accept(member, user.email)
        grants.forget()
        for team in self._teams.of_user(member.organization, member.user_id):
            if team.owners:  # an owner from now on
                self._teams.write_members(team, set(team.users))
        return accepted

    def decline(self, principal: Principal, membership_id: str) -> Membership:
        """The invitee declines an invitation: it is deleted, and the teams it was invited into let them go."""
        member = self._own(principal, membership_id)
        if member.status != "invited":
            raise Conflict("this membership was accepted: an owner removes it from the organization's Members page")
        for team in self._teams.of_user(member.organization, member.user_id):
            self._teams.write_members(team, set(team.users) - {member.user_id})
        self._store.delete_membership(member)
        grants.forget()
        return member

    def own(self, principal: Principal) -> builtins.list[Membership]:
        """The calling user's memberships and invitations, in every organization."""
        if principal.kind is not PrincipalKind.USER:
            return []
        org_keys = [org.key for org in self._orgs.all()]
        found = self._store.memberships([(org, principal.subject_id) for org in org_keys])
        return sorted(found, key=lambda m: m.created_at)

    def _own(self, principal: Principal, membership_id: str) -> Membership:
        missing = NotFound(f"organization membership {membership_id} not found")
        if principal.kind is not PrincipalKind.USER:
            raise missing
        pointer = self._store.membership_pointer(membership_id) if looks_like(membership_id, "ou") else None
        if pointer is None or pointer[1] != principal.subject_id:
            raise missing
        member = self._store.membership(*pointer)
        if member is None:
            raise missing
        return member

    def _check_pending(self, org: Organization) -> None:
        members = self._store.memberships_of(org.key)
        if sum(1 for m in members if m.status == "invited") >= limits.PENDING_INVITATIONS_MAX:
            raise TooManyRequests(
                f"{org.name} has {limits.PENDING_INVITATIONS_MAX} pending invitations: wait until some are "
                "accepted, or delete some"
            )

    def _count_invitation(self, principal: Principal) -> None:
        """At most `limits.INVITATIONS_PER_DAY` invitations a day by one caller, in all organizations (each
        e-mail invitation makes an account); site admins are not counted."""
        if principal.site_admin:
            return
        today = clock.now_iso()[:10]

        def step() -> None:  # another invitation counted meanwhile: count again
            self._store.count_invitation(principal.subject_id, today)

        optimistic(step, attempts=8, exhausted="invitations are being counted concurrently; retry")

    def ensure(
        self, organization: str, user: User, status: str = "active", must_be_new: bool = False, who: str = ""
    ) -> Membership:
        """The user's membership in the organization stored under the key `organization`, created when missing."""
        existing = self._store.membership(organization, user.id)
        taken = f"{who or user.username} is already a member of {self._orgs.name_of(organization)}"
        if existing is not None:
            if must_be_new:
                raise Conflict(taken)
            return existing
        added = self._store.add_membership(organization, user.id, user.email, status)
        if added is None:
            raise Conflict(taken)
        grants.forget()
        return added

    def visible_member(self, organization: str, username: str) -> str:
        """The id of the user named `username` whose membership of the organization the organization sees
        (active, or invited by e-mail). Anyone else answers as a username that does not exist."""
        user = self._accounts.find_user(username)
        member = self._store.membership(organization, user.id) if user else None
        if user is None or member is None or member.hidden:
            raise NotFound(f"user {username} not found")
        return user.id

    def member_keys(self, user_ids: list[str], org_keys: list[str]) -> dict[str, set[str]]:
        """Operator path (the site admin API, which checks first): the organization keys each user is a member of."""
        found: dict[str, set[str]] = {user: set() for user in user_ids}
        for member in self._store.memberships([(org, user) for user in user_ids for org in org_keys]):
            found.setdefault(member.user_id, set()).add(member.organization)
        return found

    def list(
        self, principal: Principal, organization: str, emails: list[str] | None = None, status: str | None = None,
        query: str | None = None,
    ) -> list[Membership]:  # fmt: skip
        org = self._teams.organization(principal, organization, Action.READ_ORGANIZATION)
        return self.list_of(org, emails, status, query)

    def list_of(
        self,
        org: Organization,
        emails: builtins.list[str] | None = None,
        status: str | None = None,
        query: str | None = None,
    ) -> builtins.list[Membership]:
        """The memberships of `org`, read with a permission check (`TeamService.organization[_by_key]`)."""
        for email in emails or []:
            check_email(email)
        if status is not None and status not in STATUSES:
            raise Invalid("filter[status] must be invited or active", pointer="/filter/status")
        wanted = {e.lower() for e in emails or []}
        found = [m for m in self._store.memberships_of(org.key) if not m.hidden]
        found = [m for m in found if (not wanted or m.email.lower() in wanted) and (not status or m.status == status)]
        if query:
            found = [m for m in found if query.lower() in m.email.lower()]
        return sorted(found, key=lambda m: m.created_at)

    def get(self, principal: Principal, membership_id: str, action: Action = Action.READ_ORGANIZATION) -> Membership:
        pointer = self._store.membership_pointer(membership_id) if looks_like(membership_id, "ou") else None
        member = self._store.membership(*pointer) if pointer else None
        if member is None or member.hidden:
            raise NotFound(f"organization membership {membership_id} not found")
        try:
            self._orgs.get_by_key(principal, member.organization, Action.READ_ORGANIZATION)
        except NotFound as exc:
            raise NotFound(f"organization membership {membership_id} not found") from exc
        if action is not Action.READ_ORGANIZATION:
            self._orgs.get_by_key(principal, member.organization, action)
        return member

    def delete(self, principal: Principal, membership_id: str) -> None:
        member = self.get(principal, membership_id, Action.MANAGE_MEMBERSHIP)
        teams = sorted(self._teams.of_user(member.organization, member.user_id), key=lambda t: not t.owners)
        for team in teams:  # the owners team first: refusing to drop the last owner leaves everything as it was
            self._teams.set_members(principal, team, set(team.users) - {member.user_id})
        self._store.delete_membership(member)
        grants.forget()

    def remove_everywhere(self, user_id: str) -> builtins.list[str]:
        """Deprovisioning (SCIM): the user leaves every team and organization at once, without a caller's check;
        an organization whose last owner they are keeps them (named in the answer: an owner must act there)."""
        kept: builtins.list[str] = []
        for org in self._orgs.all():
            member = self._store.membership(org.key, user_id)
            if member is None:
                continue
            teams = sorted(self._teams.of_user(org.key, user_id), key=lambda t: not t.owners)
            try:
                for team in teams:  # the owners team first: refusing its last owner leaves everything as it was
                    self._teams.write_members(team, set(team.users) - {user_id})
            except Conflict:
                kept.append(org.name)
                continue
            self._store.delete_membership(member)
        grants.forget()
        return kept

    def _send_invitation(self, address: str, organization: str, inviter: str) -> None:
        """The invitation e-mail (through the site admin's SMTP server when one is set); a failure is logged, the
        invitation stands (the invitee also sees it on their organizations page)."""
        if self._mail is None:
            return
        text = (f"{inviter} invited you to join the organization {organization} on Terrace.\n\n"
                f"Sign in to accept: {self._public_url}/app/organizations\n")  # fmt: skip
        result = self._mail.send([address], f"Invitation to {organization} on Terrace", text, INVITATION_TIMEOUT_S)
        if not result.ok:
            log.warning("invitation e-mail to the invitee of %s not sent: %s", organization, result.detail)

    def _user_by_email(self, email: str) -> User | None:
        user_id = self._accounts.user_id_by_email(email)
        if user_id is None:
            return None
        try:
            return self._accounts.get_user(user_id)
        except NotFound:
            return None

    def _user_by_id(self, user_ref: str) -> User | None:
        if not looks_like(user_ref, "user"):
            return None
        try:
            return self._accounts.get_user(user_ref)
        except NotFound:
            return None
