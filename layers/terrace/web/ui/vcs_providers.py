"""An organization's VCS providers (Settings → Version control): its OAuth clients listed, one created with a
personal access token (GitHub, GitHub Enterprise Server, Gitea or Forgejo as a GitHub-compatible
`github_enterprise` client, GitLab.com or a self-managed GitLab) whose OAuth token the workspace connect form
offers at once, and deleted. The same service calls as the API's `POST /organizations/:org/oauth-clients` and
`DELETE /oauth-clients/:id`, with their checks (`manage-vcs-settings`); the token is never shown again, nor put
back into the form after an error.

A client made with an OAuth application's `key`/`secret` (GitHub, GitLab, Bitbucket Cloud) gets its token through
the browser: its Connect button (a CSRF-checked POST) sends the owner to the forge's authorize URL
(`services/vcs/oauth_flow.py`), and the forge sends the browser back to the client's `callback-url`, HCP's
`/auth/<client id>/callback`, which hands the code and state over to `/app/oauth-clients/<id>/callback` (the
session cookie's path is `/app`). HCP's `connect-path`, `/auth/<client id>?organization_id=`, leads to the
organization's page with that button."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.services.vcs.oauth_exchange import callback_url, connectable
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui.session import CheckedFormDep, SessionDep, field_of, render

router = APIRouter(prefix="/app", include_in_schema=False)
connect_router = APIRouter(include_in_schema=False)  # HCP's connect-path and callback-url, outside `/app`
PAGE = "/{organization}/settings/version-control"
FORM_ERRORS = (errors.Invalid, errors.Conflict, errors.Forbidden, errors.NotFound)

# the form's choices: (value, label, service-provider, default http-url, the api-url's path below the http-url)
CHOICES: tuple[tuple[str, str, str, str, str], ...] = (
    ("github", "GitHub", "github", "https://github.com", ""),
    ("github_enterprise", "GitHub Enterprise Server", "github_enterprise", "", "/api/v3"),
    ("gitea", "Gitea or Forgejo (GitHub-compatible)", "github_enterprise", "", "/api/v1"),
    ("gitlab_hosted", "GitLab.com", "gitlab_hosted", "https://gitlab.com", "/api/v4"),
    ("gitlab_community_edition", "GitLab Community Edition (self-managed)", "gitlab_community_edition", "", "/api/v4"),
    ("gitlab_enterprise_edition", "GitLab Enterprise Edition (self-managed)", "gitlab_enterprise_edition", "",
     "/api/v4"),
)  # fmt: skip
DEFAULT_API = {"github": "https://api.github.com"}


def _path(organization: str) -> str:
    return f"/app/{quote(organization, safe='')}/settings/version-control"


def attributes_of(form: dict[str, str]) -> dict[str, Any]:
    """The API's `oauth-clients` attributes for the form: a blank http-url or api-url is the provider's usual."""
    choice = next((c for c in CHOICES if c[0] == form.get("provider")), None)
    if choice is None:
        raise errors.Invalid("choose one of the providers listed", pointer="/data/attributes/service-provider")
    value, _, provider, default_http, api_path = choice
    http_url = form.get("http_url", "").strip().rstrip("/") or default_http
    if not http_url:
        raise errors.Invalid(f"http-url is required for {choice[1]}: the forge's address",
                             pointer="/data/attributes/http-url")  # fmt: skip
    api_url = form.get("api_url", "").strip() or DEFAULT_API.get(value) or http_url + api_path
    token = form.get("oauth_token_string", "").strip()
    if not token:
        raise errors.Invalid("a personal access token is required", pointer="/data/attributes/oauth-token-string")
    return {"service-provider": provider, "name": form.get("name", "").strip() or None, "http-url": http_url,
            "api-url": api_url, "oauth-token-string": token}  # fmt: skip


def _page(request: Request, container: Any, session: Any, organization: str, status: int = 200,
          **extra: Any) -> Any:  # fmt: skip
    clients = container.oauth_clients.list(session.principal, organization)  # NotFound: not a member
    extra.setdefault("form", {})
    return render(request, "vcs_providers.html", session, status=status, organization=organization,
                  org_tab="/settings", clients=clients, choices=CHOICES, connectable=connectable,
                  callback_url=lambda c: callback_url(container.settings.public_url, c.id), **extra)  # fmt: skip


@router.get(PAGE)
def providers_page(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    return _page(request, container, session, organization)


@router.post(PAGE)
def create_provider(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, form: CheckedFormDep
) -> Any:
    try:
        container.oauth_clients.create(session.principal, organization, attributes_of(form), None)
    except FORM_ERRORS as exc:
        kept = {k: v for k, v in form.items() if k != "oauth_token_string"}  # a secret is never sent back
        status = status_of(exc) if isinstance(exc, (errors.Forbidden, errors.NotFound)) else 422
        return _page(request, container, session, organization, status=status, form=kept, error=exc.detail,
                     error_field=field_of(exc).replace("-", "_"))  # fmt: skip
    return RedirectResponse(_path(organization) + "?created=1", status_code=303)


@router.post(PAGE + "/{client_id}/delete")
def delete_provider(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, client_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    """Delete one of the organization's clients (another organization's is not found here)."""
    try:
        container.oauth_clients.delete(session.principal, client_id, organization)
    except FORM_ERRORS as exc:
        return _page(request, container, session, organization, status=status_of(exc), error=exc.detail)
    return RedirectResponse(_path(organization) + "?deleted=1", status_code=303)


@router.post(PAGE + "/{client_id}/connect")
def connect_provider(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, client_id: str,
    form: CheckedFormDep,
) -> Any:  # fmt: skip
    """Send the owner to the forge to authorize the client's OAuth application (see the module's text)."""
    try:
        target = container.vcs_oauth.start(session.principal, client_id, session.id, organization)
    except FORM_ERRORS as exc:
        status = 422 if isinstance(exc, errors.Invalid) else status_of(exc)
        return _page(request, container, session, organization, status=status, error=exc.detail)
    return RedirectResponse(target, status_code=303)


@router.get("/oauth-clients/{client_id}")
def provider_of(container: ContainerDep, session: SessionDep, client_id: str) -> Any:
    """Where HCP's connect-path leads: the client's organization's Version control page."""
    client = container.oauth_clients.get(session.principal, client_id)
    return RedirectResponse(_path(client.organization) + f"#client-{quote(client.id, safe='')}", status_code=303)


@router.get("/oauth-clients/{client_id}/callback")
def connected(request: Request, container: ContainerDep, session: SessionDep, client_id: str) -> Any:
    """The forge's answer: the code exchanged for the client's token (a bad state is a 400 page, nothing stored)."""
    params = {name: request.query_params.get(name, "") for name in ("code", "state", "error")}
    token = container.vcs_oauth.finish(session.principal, client_id, params, session.id)
    return RedirectResponse(_path(token.organization) + "?connected=1", status_code=303)


@connect_router.get("/auth/{client_id}")
def connect_path(client_id: str) -> Any:
    return RedirectResponse(f"/app/oauth-clients/{quote(client_id, safe='')}", status_code=303)


@connect_router.get("/auth/{client_id}/callback")
def forge_callback(request: Request, client_id: str) -> Any:
    query = request.url.query
    return RedirectResponse(f"/app/oauth-clients/{quote(client_id, safe='')}/callback" + (f"?{query}" if query else ""),
                            status_code=303)  # fmt: skip
