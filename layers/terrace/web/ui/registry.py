"""The private registry's pages: an organization's modules and providers, a module's versions with the README,
inputs, outputs and resources of one version and how to use it, and a provider's versions with their platforms.
Same service calls as the API (`services/registry/`); the registry host is the one terraform accepts for this
server (`127.0.0.1:<port>` for a local `localhost:<port>`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse
from python_multipart import create_form_parser
from python_multipart.exceptions import FormParserError

from terrace.domain import errors
from terrace.domain.registry_modules import registry_hostname
from terrace.web.deps import ContainerDep
from terrace.web.jsonapi import RawBody
from terrace.web.ui.markdown import readme_html
from terrace.web.ui.session import CsrfRejected, SessionDep, render, same_token

router = APIRouter(prefix="/app", include_in_schema=False)


@router.get("/{organization}/registry")
def modules(request: Request, container: ContainerDep, session: SessionDep, organization: str) -> Any:
    query = {"q": request.query_params.get("q", "")}
    found = container.registry_modules.list(session.principal, organization, query)
    providers = container.registry_providers.list(session.principal, organization, query)
    return render(request, "registry.html", session, organization=organization, modules=found, providers=providers,
                  org_tab="/registry", q=query["q"])  # fmt: skip


@router.get("/{organization}/registry-providers/{name}")
def provider_page(request: Request, container: ContainerDep, session: SessionDep, organization: str, name: str) -> Any:
    provider, versions = container.provider_platforms.page(session.principal, organization, name)
    host = registry_hostname(request.url.netloc)
    return render(request, "registry_provider.html", session, organization=organization, provider=provider,
                  versions=versions, source=f"{host}/{provider.namespace}/{provider.name}",
                  org_tab="/registry")  # fmt: skip


@router.get("/{organization}/registry/{name}/{provider}")
def module_page(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    provider: str,
    version: str = Query(""),
) -> Any:
    return _module_page(request, container, session, (organization, name, provider), version)


def _module_page(
    request: Request,
    container: Any,
    session: Any,
    address: tuple[str, str, str],
    version: str,
    status: int = 200,
    error: str = "",
    form: dict[str, str] | None = None,
) -> Any:
    organization = address[0]
    module, shown, docs = container.module_versions.page(session.principal, organization, address, version or None)
    host = registry_hostname(request.url.netloc)
    readme = readme_html(str(docs.get("readme") or ""))  # Markdown, sanitized (web/ui/markdown.py)
    return render(request, "registry_module.html", session, status, organization=organization, module=module,
                  shown=shown, docs=docs, readme=readme,
                  source=f"{host}/{module.namespace}/{module.name}/{module.provider}",
                  org_tab="/registry", error=error, form=form or {})  # fmt: skip


def module_upload(request: Request, session: SessionDep, body: RawBody) -> dict[str, Any]:
    """The upload form (multipart: a version and its `.tar.gz`, within the request size limit the body middleware
    enforces), parsed in memory by python-multipart, its CSRF token checked."""
    fields: dict[str, bytes] = {}

    def on_part(part: Any) -> None:
        name = part.field_name.decode("utf-8", "replace")
        if hasattr(part, "file_object"):
            part.file_object.seek(0)
            fields[name] = part.file_object.read()
        else:
            fields[name] = part.value or b""

    config = {"MAX_MEMORY_FILE_SIZE": len(body) + 1, "MAX_FIELDS": 8, "MAX_HEADER_COUNT": 8}
    try:
        parser = create_form_parser({"Content-Type": request.headers.get("content-type", "").encode()}, on_part,
                                    on_part, config)  # fmt: skip
        parser.write(body)
        parser.finalize()
    except (ValueError, FormParserError) as exc:
        raise errors.Invalid(f"the upload is not a multipart form: {exc}") from exc
    if not same_token(fields.get("csrf_token", b"").decode("utf-8", "replace"), session.csrf_token):
        raise CsrfRejected()
    return {
        "version": fields.get("version", b"").decode("utf-8", "replace").strip(),
        "tarball": fields.get("tarball", b""),
    }


ModuleUploadDep = Annotated[dict[str, Any], Depends(module_upload)]


@router.post("/{organization}/registry/{name}/{provider}/versions")
def upload_module_version(
    request: Request,
    container: ContainerDep,
    session: SessionDep,
    organization: str,
    name: str,
    provider: str,
    upload: ModuleUploadDep,
) -> Any:
    """Publishing a module version from the browser: the same checks and landing as the API's upload."""
    address = (organization, name, provider)
    try:
        published = container.module_versions.publish(
            session.principal, organization, address, upload["version"], upload["tarball"]
        )
    except (errors.Invalid, errors.Conflict) as exc:
        status = 409 if isinstance(exc, errors.Conflict) else 422
        form = {"version": upload["version"]}
        return _module_page(request, container, session, address, "", status, exc.detail, form)
    target = f"/app/{organization}/registry/{name}/{provider}?version={published.version}"
    return RedirectResponse(target, status_code=303)
