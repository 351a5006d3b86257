"""A workspace's notifications: list with their recent deliveries, create, edit, enable/disable, verify, delete.
The same service calls as the API (`NotificationConfigurations`); the token is write-only (a blank keeps it)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from terrace.domain import errors
from terrace.domain.notifications import DESTINATION_TYPES, WORKSPACE, WORKSPACE_TRIGGERS, NotificationConfiguration
from terrace.web.deps import ContainerDep
from terrace.web.ui.session import CheckedFormDep, SessionDep, field_of, render

router = APIRouter(prefix="/app", include_in_schema=False)
TRIGGERS = list(WORKSPACE_TRIGGERS)  # runs, health assessments and auto-destroy, as the API takes them


def _path(organization: str, name: str, nc_id: str = "") -> str:
    return f"/app/{organization}/workspaces/{name}/notifications" + (f"/{nc_id}" if nc_id else "")


def _attributes(form: dict[str, str], *, editing: bool) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "name": form.get("name", "").strip(),
        "enabled": form.get("enabled") == "on",
        "triggers": [t for t in WORKSPACE_TRIGGERS if form.get(f"trigger-{t}") == "on"],
    }
    if not editing:
        attrs["destination-type"] = form.get("destination-type", "generic")
    destination = form.get("destination-type", "generic")
    if destination == "email":
        attrs["email-addresses"] = [a.strip() for a in form.get("email-addresses", "").split(",") if a.strip()]
    else:
        attrs["url"] = form.get("url", "").strip()
    if form.get("token") or not editing:
        attrs["token"] = form.get("token", "")
    return attrs


def _form_of(nc: NotificationConfiguration) -> dict[str, str]:
    form = {"name": nc.name, "destination-type": nc.destination_type, "url": nc.url or ""}
    form |= {"email-addresses": ", ".join(nc.email_addresses), "enabled": "on" if nc.enabled else ""}
    return form | {f"trigger-{t}": "on" for t in nc.triggers}


def _page(request: Request, container: Any, session: Any, organization: str, ws: Any, **extra: Any) -> Any:
    found = container.notification_configurations.list(session.principal, WORKSPACE, ws.id)
    context = {"organization": organization, "ws": ws, "configurations": found, "form": {}} | extra
    return render(request, "notifications.html", session, triggers=TRIGGERS, destinations=DESTINATION_TYPES,
                  **context)  # fmt: skip


def _users(nc: NotificationConfiguration) -> dict[str, Any]:
    """The e-mail users as they are (an API update that names none empties them, as TFC's does; the page keeps them)."""
    return {"users": {"data": [{"type": "users", "id": u} for u in nc.email_user_ids]}}


def _owned(container: Any, session: Any, ws: Any, nc_id: str) -> NotificationConfiguration:
    nc: NotificationConfiguration = container.notification_configurations.get(session.principal, nc_id)
    if nc.subscribable_id != ws.id:
        raise errors.NotFound(f"notification configuration {nc_id} not found")
    return nc


@router.get("/{organization}/workspaces/{name}/notifications")
def notifications(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    return _page(request, container, session, organization, ws)


@router.post("/{organization}/workspaces/{name}/notifications")
def create_notification(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, form: CheckedFormDep
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    try:
        container.notification_configurations.create(
            session.principal, WORKSPACE, ws.id, _attributes(form, editing=False), {}
        )
    except (errors.Invalid, errors.NotFound) as exc:
        kept = {k: v for k, v in form.items() if k != "token"}
        return _page(request, container, session, organization, ws, status=422, form=kept, error=exc.detail,
                     error_field=field_of(exc))  # fmt: skip
    return RedirectResponse(_path(organization, name), status_code=303)


def _edit_page(request: Request, session: Any, organization: str, ws: Any, nc: Any, form: Any, **extra: Any) -> Any:
    return render(request, "notification_edit.html", session, organization=organization, ws=ws, nc=nc, form=form,
                  triggers=TRIGGERS, **extra)  # fmt: skip


@router.get("/{organization}/workspaces/{name}/notifications/{nc_id}")
def edit_notification_page(
    request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str, nc_id: str
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    nc = _owned(container, session, ws, nc_id)
    return _edit_page(request, session, organization, ws, nc, _form_of(nc))


@router.post("/{organization}/workspaces/{name}/notifications/{nc_id}")
def update_notification(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    nc_id: str,
    form: CheckedFormDep,
) -> Any:
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    nc = _owned(container, session, ws, nc_id)
    try:
        attrs = _attributes({**form, "destination-type": nc.destination_type}, editing=True)
        container.notification_configurations.update(session.principal, nc.id, attrs, _users(nc))
    except (errors.Invalid, errors.NotFound) as exc:
        kept = {k: v for k, v in form.items() if k != "token"}
        return _edit_page(request, session, organization, ws, nc, kept, status=422, error=exc.detail,
                          error_field=field_of(exc))  # fmt: skip
    return RedirectResponse(_path(organization, name), status_code=303)


@router.post("/{organization}/workspaces/{name}/notifications/{nc_id}/{action}")
def act_on_notification(
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    nc_id: str,
    action: str,
    form: CheckedFormDep,
) -> Any:
    """`enable`, `disable`, `verify` or `delete`."""
    ws = container.workspaces.get_by_name(session.principal, organization, name)
    nc = _owned(container, session, ws, nc_id)
    service = container.notification_configurations
    if action in ("enable", "disable"):
        service.update(session.principal, nc.id, {"enabled": action == "enable"}, _users(nc))
    elif action == "verify":  # the page says what the destination answered (or that nobody was sent anything)
        checked = service.verify(session.principal, nc.id)
        sent = checked.delivery_responses != nc.delivery_responses  # a new answer recorded (the oldest may go)
        answered = checked.delivery_responses[-1] if sent and checked.delivery_responses else None
        outcome = "none" if answered is None else ("ok" if answered.get("successful") else "failed")
        verified = f"{_path(organization, name)}?verified={nc.id}&result={outcome}#{nc.id}"
        return RedirectResponse(verified, status_code=303)
    elif action == "delete":
        service.delete(session.principal, nc.id)
    else:
        raise errors.NotFound(f"no action {action[:32]}")
    return RedirectResponse(_path(organization, name), status_code=303)
