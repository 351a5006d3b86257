"""/api/v2/admin settings (TFE's admin API): general, cost estimation, customization, SAML, SMTP, Twilio and SCIM
settings, the OIDC signing key actions, SCIM tokens, SCIM groups and the SCIM group mappings of teams. 404 to
anyone but a site admin; secrets are never in an answer."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.errors import Invalid
from terrace.domain.tokens import IssuedToken, Token
from terrace.services.admin.settings import TEST_RESULT
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, body_attributes, paginate, resource, respond

router = APIRouter(prefix="/api/v2/admin")

SECTIONS = ("general", "cost-estimation", "customization", "saml", "smtp", "twilio", "scim")


def settings(section: str, values: dict[str, Any]) -> dict[str, Any]:
    return resource(f"{section}-settings", section, values, links={"self": f"/api/v2/admin/{section}-settings"})


def token(t: Token, secret: str | None = None) -> dict[str, Any]:
    attributes = {"created-at": t.created_at, "last-used-at": t.last_used_at, "expired-at": t.expires_at,
                  "description": t.description}  # fmt: skip
    if secret is not None:
        attributes["token"] = secret  # shown once, in the answer that created it
    return resource("authentication-tokens", t.id, attributes, links={"self": f"/api/v2/authentication-tokens/{t.id}"})


def _register(section: str) -> None:
    def read(container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
        return respond(settings(section, container.admin_settings.read(principal, section)))

    def update(body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
        values = container.admin_settings.update(principal, section, body_attributes(body))
        test = values.pop(TEST_RESULT, None)
        return respond(settings(section, values), meta={TEST_RESULT: test} if test is not None else None)

    read.__name__, update.__name__ = f"read_{section}_settings", f"update_{section}_settings"
    router.get(f"/{section}-settings")(read)
    router.patch(f"/{section}-settings")(update)


for _section in SECTIONS:
    _register(_section)


@router.post("/saml-settings/actions/revoke-old-certificate")
def revoke_old_idp_cert(container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(settings("saml", container.admin_settings.revoke_old_idp_cert(principal)))


@router.patch("/twilio-settings/verify")
def verify_twilio(body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    container.admin_settings.read(principal, "twilio")  # the site admin's, like the rest
    if not body_attributes(body).get("test-number"):
        raise Invalid("test-number is required", pointer="/data/attributes/test-number")
    raise Invalid("Terrace sends no text messages: the Twilio settings are kept but not used",
                  pointer="/data/attributes/test-number")  # fmt: skip


@router.post("/oidc-settings/actions/rotate-key", status_code=204)
def rotate_key(container: ContainerDep, principal: PrincipalDep) -> Response:
    container.admin_settings.rotate_key(principal)
    return Response(status_code=204)


@router.post("/oidc-settings/actions/trim-key", status_code=204)
def trim_key(container: ContainerDep, principal: PrincipalDep) -> Response:
    container.admin_settings.trim_key(principal)
    return Response(status_code=204)


@router.delete("/scim-settings", status_code=204)
def disable_scim(container: ContainerDep, principal: PrincipalDep) -> Response:
    container.scim_admin.disable(principal)
    return Response(status_code=204)


@router.get("/scim-tokens")
def list_scim_tokens(container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond([token(t) for t in container.scim_admin.tokens(principal)])


@router.post("/scim-tokens", status_code=201)
def create_scim_token(body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    issued: IssuedToken = container.scim_admin.create_token(principal, body_attributes(body))
    return respond(token(issued.token, issued.secret), status_code=201)


@router.get("/scim-tokens/{token_id}")
def read_scim_token(token_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(token(container.scim_admin.token(principal, token_id)))


@router.get("/scim-groups")
def list_scim_groups(request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    groups = container.scim_admin.groups(principal, request.query_params.get("q") or "")
    page, meta, links = paginate(request, groups)
    return respond([resource("scim-groups", g["id"], {"name": g["display_name"]}) for g in page], meta=meta,
                   links=links)  # fmt: skip


@router.post("/teams/{team_id}/scim-group-mapping", status_code=204)
def map_team(team_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.scim_admin.map_team(principal, team_id, body_attributes(body).get("scim-group-id"))
    return Response(status_code=204)


@router.patch("/teams/{team_id}/scim-group-mapping", status_code=204)
def pause_team(team_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.scim_admin.pause_team(principal, team_id, body_attributes(body).get("scim-sync-paused"))
    return Response(status_code=204)


@router.delete("/teams/{team_id}/scim-group-mapping", status_code=204)
def unmap_team(team_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.scim_admin.unmap_team(principal, team_id)
    return Response(status_code=204)
