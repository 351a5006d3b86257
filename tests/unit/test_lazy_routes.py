"""The API Lambda's app builds the UI's and the site admin API's routes on their first request (`create_app(...,
lazy=True)`, `web/lazy_routes.py`): it then serves exactly the routes of the eager app, and each request is routed
as the eager app routes it."""

from __future__ import annotations

from app_routes import routes
from fastapi.testclient import TestClient
from terrace.bootstrap import build_memory
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app


def signature(app) -> list[tuple[str, tuple[str, ...]]]:  # type: ignore[no-untyped-def]
    return [(r.path, tuple(sorted(getattr(r, "methods", None) or ()))) for r in routes(app.routes)]


def paths(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [path for path, _ in signature(app)]


def test_the_lazy_app_starts_with_the_api_and_ends_with_every_route_of_the_eager_app_in_its_order():
    container = build_memory()
    eager = create_app(container)
    lazy = create_app(container, lazy=True)
    token = container.accounts.issue_token(
        PrincipalKind.USER, container.accounts.create_user("admin", "a@example.com", site_admin=True).id
    ).secret
    client = TestClient(lazy)
    assert not any(p.startswith(("/app", "/api/v2/admin")) for p in paths(lazy))
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/v2/account/details", headers=headers).status_code == 200
    assert not any(p.startswith(("/app", "/api/v2/admin")) for p in paths(lazy))  # still the API only

    assert client.get("/api/v2/admin/users", headers=headers).status_code == 200  # the admin group, on demand
    assert not any(p.startswith("/app") for p in paths(lazy))
    page = client.get("/app/sign-in", follow_redirects=False)  # the UI group
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    eager_client = TestClient(eager)
    for path in ("/", "/app/acme", "/app/nope/workspaces", "/static/terrace.css", "/no/such/page"):
        assert (
            client.get(path, follow_redirects=False).status_code
            == eager_client.get(path, follow_redirects=False).status_code
        ), path

    assert sorted(signature(lazy)) == sorted(signature(eager))
    # the order within each group is the eager app's (a route of one group never matches another group's paths)
    for prefix in ("/app", "/api/v2/admin", "/api/v2/organizations"):
        assert [s for s in signature(lazy) if s[0].startswith(prefix)] == [
            s for s in signature(eager) if s[0].startswith(prefix)
        ]


def test_the_openapi_document_of_the_lazy_app_has_every_route():
    lazy = create_app(build_memory(), lazy=True)
    document = TestClient(lazy).get("/api/openapi.json").json()
    eager = create_app(build_memory()).openapi()
    assert sorted(document["paths"]) == sorted(eager["paths"])
    assert any(p.startswith("/app") for p in paths(lazy))
