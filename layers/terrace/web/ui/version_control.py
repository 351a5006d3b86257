"""A workspace's repository on its settings page (Settings → Version control): connect it through one of the
organization's OAuth tokens (a GitHub-shaped, GitLab, Bitbucket or Azure DevOps provider) or an installation of the
deployment's GitHub App the organization may use, the repository's identifier, its branch, the working directory,
trigger patterns and the tags regex; disconnect it. The same service call as the API's `PATCH /workspaces/:id` with
`vcs-repo` (the webhook is registered or deleted there: `services/vcs/connections.py`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.domain.vcs import VCS_REPO
from terrace.web.deps import ContainerDep
from terrace.web.errors import status_of
from terrace.web.ui.session import CheckedFormDep, SessionDep, field_of, render

router = APIRouter(prefix="/app", include_in_schema=False)
PAGE = "/{organization}/workspaces/{name}/settings/version-control"
PATTERNS_MAX = 100


def _form_of(ws: Any) -> dict[str, str]:
    repo = ws.extra.get(VCS_REPO) or {}
    patterns = ws.extra.get("trigger-patterns")
    return {
        "oauth_token_id": str(repo.get("oauth-token-id") or repo.get("github-app-installation-id") or ""),
        "identifier": str(repo.get("identifier") or ""),
        "branch": str(repo.get("branch") or ""),
        "tags_regex": str(repo.get("tags-regex") or ""),
        "working_directory": ws.working_directory,
        "trigger_patterns": "\n".join(p for p in patterns if isinstance(p, str)) if isinstance(patterns, list) else "",
    }


def _page(request: Request, container: Any, session: Any, organization: str, ws: Any, status: int = 200,
          **extra: Any) -> Any:  # fmt: skip
    tokens = container.repository_connections.choices(session.principal, ws.organization)
    extra.setdefault("form", _form_of(ws))
    return render(request, "version_control.html", session, status=status, organization=organization, ws=ws,
                  repo=ws.extra.get(VCS_REPO), tokens=tokens, **extra)  # fmt: skip


@router.get(PAGE)
def version_control(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    return _page(request, container, session, organization, ws)


@router.post(PAGE)
def connect(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    patterns = [line.strip() for line in form.get("trigger_patterns", "").splitlines() if line.strip()]
    through = form.get("oauth_token_id", "")
    via = "github-app-installation-id" if through.startswith("ghain-") else "oauth-token-id"  # a GitHub App's
    repo = {"identifier": form.get("identifier", "").strip(), via: through, "branch": form.get("branch", "").strip(),
            "tags-regex": form.get("tags_regex", "").strip() or None}  # fmt: skip
    attributes = {"vcs-repo": repo, "working-directory": form.get("working_directory", "").strip(),
                  "trigger-patterns": patterns[:PATTERNS_MAX]}  # fmt: skip
    try:
        container.workspaces.update(session.principal, ws, attributes)
    except (errors.Invalid, errors.NotFound, errors.Forbidden) as exc:
        status = status_of(exc) if isinstance(exc, errors.Forbidden) else 422
        return _page(request, container, session, organization, ws, status=status, form=form, error=exc.detail,
                     error_field=field_of(exc).replace("-", "_"))  # fmt: skip
    return RedirectResponse(f"/app/{organization}/workspaces/{name}/settings/version-control?saved=1", status_code=303)


@router.post(PAGE + "/disconnect")
def disconnect(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    try:
        container.workspaces.update(session.principal, ws, {"vcs-repo": None})
    except errors.Forbidden as exc:
        return _page(request, container, session, organization, ws, status=status_of(exc), error=exc.detail)
    return RedirectResponse(
        f"/app/{organization}/workspaces/{name}/settings/version-control?disconnected=1", status_code=303
    )
