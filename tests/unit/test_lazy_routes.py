"""The API Lambda's app builds each router of the API (`web/api_routes.py`), the UI's routes and the site admin
API's on the first request that may need them (`create_app(..., lazy=True)`, `web/lazy_routes.py`): it then serves
exactly the routes of the eager app, in the same order whichever requests came first, and each request is routed
as the eager app routes it."""

from __future__ import annotations

import re

from app_routes import routes
from fastapi.testclient import TestClient
from terrace.bootstrap import build_memory
from terrace.domain.principal import PrincipalKind
from terrace.web.api_routes import API_ROUTERS, api_router
from terrace.web.app import create_app


def signature(app) -> list[tuple[str, tuple[str, ...]]]:  # type: ignore[no-untyped-def]
    return [(r.path, tuple(sorted(getattr(r, "methods", None) or ()))) for r in routes(app.routes)]


def paths(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [path for path, _ in signature(app)]


def test_every_route_of_an_api_router_starts_with_one_of_its_prefixes():
    """What makes a lazy group safe to leave out: a path that starts with none of its prefixes matches none of its
    routes (a route's path is literal up to its first parameter)."""
    for module, name, prefixes in API_ROUTERS:
        for route in routes(api_router(module, name).routes):
            literal = route.path.split("{")[0]
            assert literal.startswith(prefixes), f"{module}.{name}: {route.path} is not under {prefixes}"


def test_the_lazy_app_builds_what_a_request_needs_and_routes_it_as_the_eager_app():
    container = build_memory()
    eager = create_app(container)
    lazy = create_app(container, lazy=True)
    token = container.accounts.issue_token(
        PrincipalKind.USER, container.accounts.create_user("admin", "a@example.com", site_admin=True).id
    ).secret
    client, eager_client = TestClient(lazy), TestClient(eager)
    headers = {"Authorization": f"Bearer {token}"}
    assert not any(p.startswith(("/app", "/api/v2/")) for p in paths(lazy))
    assert client.get("/api/v2/account/details", headers=headers).status_code == 200
    built = {p for p in paths(lazy) if p.startswith("/api/v2/")}
    assert built and all(p.startswith(("/api/v2/account/", "/api/v2/authentication-tokens/", "/api/v2/users/"))
                         for p in built), built  # fmt: skip

    assert client.get("/api/v2/admin/users", headers=headers).status_code == 200  # the admin group, on demand
    assert not any(p.startswith("/app") for p in paths(lazy))
    page = client.get("/app/sign-in", follow_redirects=False)  # the UI group
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    org = {"data": {"type": "organizations", "attributes": {"name": "acme", "email": "a@example.com"}}}
    for method, path, body in (
        ("POST", "/api/v2/organizations", org),
        ("GET", "/api/v2/organizations/acme/workspaces", None),
        ("GET", "/api/v2/organizations/acme/no-such-thing", None),
        ("DELETE", "/api/v2/organizations/acme/workspaces", None),
        ("GET", "/api/v2/runs/run-nope", None),
        ("GET", "/api/v2/runs/", None),
        ("GET", "/api/v2/ping", None),
        ("GET", "/state/v1/acme/app", None),
        ("GET", "/api/v2/nothing-here", None),
        ("GET", "/", None),
        ("GET", "/app/acme", None),
        ("GET", "/app/nope/workspaces", None),
        ("GET", "/static/terrace.css", None),
        ("GET", "/no/such/page", None),
    ):
        lazy_answer = client.request(method, path, json=body, headers=headers, follow_redirects=False)
        eager_answer = eager_client.request(method, path, json=body, headers=headers, follow_redirects=False)
        if method == "POST":  # the same container: the second create is a conflict
            assert (lazy_answer.status_code, eager_answer.status_code) == (201, 409), path
            continue
        assert lazy_answer.status_code == eager_answer.status_code, (method, path)
        same = re.sub(r'"(id|created-at)":"[^"]*"', "", lazy_answer.text)
        assert same == re.sub(r'"(id|created-at)":"[^"]*"', "", eager_answer.text), (method, path)


def test_the_lazy_app_ends_with_the_routes_of_the_eager_app_in_their_order_whichever_came_first():
    eager = signature(create_app(build_memory()))
    lazy = create_app(build_memory(), lazy=True)
    client = TestClient(lazy)
    for path in ("/api/v2/admin/users", "/app/sign-in", "/api/v2/runs/run-x", "/api/v2/organizations/x/teams"):
        client.get(path)
    assert signature(lazy) != eager  # not everything yet
    for _, _, prefixes in reversed(API_ROUTERS):
        client.get(prefixes[-1] + "x")
    assert signature(lazy) == eager


def test_the_openapi_document_of_the_lazy_app_has_every_route():
    lazy = create_app(build_memory(), lazy=True)
    document = TestClient(lazy).get("/api/openapi.json").json()
    eager = create_app(build_memory()).openapi()
    assert document == eager
    assert any(p.startswith("/app") for p in paths(lazy))
