"""Pages answer fast: each list page of the web UI reads the table a fixed number of times, whatever its rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from run_helpers import make_run_env
from state_helpers import Env, make_env, null_resource, state_bytes
from terrace.domain.principal import PrincipalKind
from test_web_ui import signed_in
from test_web_ui_runs import ui

READS = ("get", "query", "batch_get", "scan", "iter_chunks", "get_range", "head")


def counting(container: Any, monkeypatch: Any, org_cache_s: float = 0.0) -> list[str]:
    """Every table and blob read the page makes, by method name. Organizations are cached per process for a short
    while; the cache is pinned (off by default: every page load reads them) so that counts compared with each other
    do not depend on how long the test took between them."""
    calls: list[str] = []
    monkeypatch.setattr(container.organizations, "_cache_ttl_s", org_cache_s)
    for store in (container.table, container.blobs):
        for method in READS:
            if hasattr(store, method):
                original = getattr(store, method)
                monkeypatch.setattr(
                    store, method, lambda *a, _o=original, _m=method, **k: (calls.append(_m), _o(*a, **k))[1]
                )
    return calls


def reads(client: TestClient, calls: list[str], url: str, must_show: str) -> int:
    calls.clear()
    page = client.get(url)
    assert page.status_code == 200 and must_show in page.text, url
    return len(calls)


def assert_fixed_reads(client: TestClient, calls: list[str], url: str, add_row: Callable[[int], str]) -> None:
    """Table and blob reads for one row == for five rows (each added row's marker must show on the page)."""
    first = add_row(0)
    with_one = reads(client, calls, url, first)
    assert with_one > 0  # the counter sees the page's reads
    last = ""
    for index in range(1, 5):
        last = add_row(index)
    assert reads(client, calls, url, last) == with_one, f"{url} reads the table once per row"


@pytest.fixture
def env() -> Env:
    return make_env()


def test_variables_list(env: Env, monkeypatch: Any) -> None:
    client = signed_in(env)

    def add(index: int) -> str:
        attrs = {"key": f"v{index}", "value": f"value-{index}", "category": "terraform", "sensitive": index % 2 == 1}
        env.container.variables.create(env.principal, env.ws(), attrs)
        return f"v{index}"

    assert_fixed_reads(client, counting(env.container, monkeypatch), "/app/acme/workspaces/prod/variables", add)


def test_tokens_list(env: Env, monkeypatch: Any) -> None:
    client = signed_in(env)

    def add(index: int) -> str:
        env.container.accounts.issue_token(PrincipalKind.USER, env.principal.subject_id, description=f"laptop-{index}")
        return f"laptop-{index}"

    assert_fixed_reads(client, counting(env.container, monkeypatch), "/app/account/tokens", add)


def test_state_versions_list_and_search(env: Env, monkeypatch: Any) -> None:
    client = signed_in(env)
    env.lock()

    def add(index: int) -> str:
        resources = [null_resource(f"r{i}", f"i-{i:04d}") for i in range(index + 1)]
        r = env.push(state_bytes(index + 1, resources=resources), index + 1)
        assert r.status_code == 201
        env.drain_events()
        return str(r.json()["data"]["id"])

    calls = counting(env.container, monkeypatch)
    assert_fixed_reads(client, calls, "/app/acme/workspaces/prod/states", add)
    one_hit = reads(client, calls, "/app/acme/search?q=null_resource.r4", "1 resource")
    five_hits = reads(client, calls, "/app/acme/search?type=null_resource", "5 resources")
    assert five_hits == one_hit, "search reads the table once per hit"


def test_runs_list(monkeypatch: Any) -> None:
    env = make_run_env()
    client = ui(env)
    cv_id = env.upload_config()

    def add(index: int) -> str:
        return str(env.create_run(cv_id, message=f"run number {index}")["id"])

    calls = counting(env.container, monkeypatch)
    assert_fixed_reads(client, calls, "/app/acme/workspaces/app/runs", add)
