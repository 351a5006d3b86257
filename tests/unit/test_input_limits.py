"""Oversized fields through the API: a 4xx naming the field (or 413), and nothing stored or changed."""

from __future__ import annotations

from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env
from state_helpers import Env
from table_items import memory_items
from terrace.domain import limits

MB = 1024 * 1024


def table_snapshot(container: Any) -> list[str]:
    return sorted(repr(item) for item in memory_items(container.table).values())


def assert_refused(response: Any, statuses: tuple[int, ...] = (413, 422), pointer: str | None = None) -> None:
    assert response.status_code in statuses, response.text
    error = response.json()["errors"][0]
    assert error["status"] == str(response.status_code) and error["detail"]
    if pointer:
        assert error["source"]["pointer"] == pointer


def doc(type_: str, **attributes: Any) -> dict[str, Any]:
    return {"data": {"type": type_, "attributes": attributes}}


@pytest.mark.parametrize(
    ("attribute", "value"),
    [
        ("source-url", "https://x.test/" + "a" * MB),
        ("source-name", "n" * (limits.TEXT_ATTRIBUTE_MAX + 1)),
        ("description", "d" * (limits.DESCRIPTION_MAX + 1)),
        ("trigger-prefixes", ["p" * 1000] * 100),
        ("terraform-version", "1.0." + "1" * 500),
    ],
)
def test_workspace_attributes_past_their_limit(state_env: Env, attribute: str, value: Any) -> None:
    before = table_snapshot(state_env.container)
    created = state_env.client.post(
        "/api/v2/organizations/acme/workspaces",
        headers=state_env.auth,
        json=doc("workspaces", name="big", **{attribute: value}),
    )
    assert_refused(created, pointer=f"/data/attributes/{attribute}")
    updated = state_env.client.patch(
        f"/api/v2/workspaces/{state_env.ws_id}", headers=state_env.auth, json=doc("workspaces", **{attribute: value})
    )
    assert_refused(updated, pointer=f"/data/attributes/{attribute}")
    assert table_snapshot(state_env.container) == before


@pytest.mark.parametrize("path", ["..", "../etc", "a/../../b", "/etc", "\\\\server\\share", "C:\\x", "a" * 600])
def test_working_directory_must_stay_inside_the_configuration(state_env: Env, path: str) -> None:
    before = table_snapshot(state_env.container)
    created = state_env.client.post(
        "/api/v2/organizations/acme/workspaces",
        headers=state_env.auth,
        json=doc("workspaces", name="wd", **{"working-directory": path}),
    )
    assert_refused(created, (422,), "/data/attributes/working-directory")
    updated = state_env.client.patch(
        f"/api/v2/workspaces/{state_env.ws_id}",
        headers=state_env.auth,
        json=doc("workspaces", **{"working-directory": path}),
    )
    assert_refused(updated, (422,), "/data/attributes/working-directory")
    assert table_snapshot(state_env.container) == before
    fine = state_env.client.patch(
        f"/api/v2/workspaces/{state_env.ws_id}",
        headers=state_env.auth,
        json=doc("workspaces", **{"working-directory": "infra/live..d/./prod"}),
    )
    assert fine.status_code == 200, fine.text


def test_lock_reason_past_its_limit(state_env: Env) -> None:
    before = table_snapshot(state_env.container)
    response = state_env.client.post(
        f"/api/v2/workspaces/{state_env.ws_id}/actions/lock", headers=state_env.auth, json={"reason": "r" * MB}
    )
    assert_refused(response, pointer="/data/attributes/reason")
    assert table_snapshot(state_env.container) == before
    assert not state_env.ws().locked


def test_variable_description_past_its_limit(state_env: Env) -> None:
    before = table_snapshot(state_env.container)
    body = doc("vars", key="region", value="eu", category="terraform", description="d" * MB)
    response = state_env.client.post(f"/api/v2/workspaces/{state_env.ws_id}/vars", headers=state_env.auth, json=body)
    assert_refused(response, pointer="/data/attributes/description")
    assert table_snapshot(state_env.container) == before


def test_organization_email_and_settings_past_their_limit(state_env: Env) -> None:
    before = table_snapshot(state_env.container)
    email = "a" * MB + "@example.com"
    created = state_env.client.post(
        "/api/v2/organizations", headers=state_env.auth, json=doc("organizations", name="big", email=email)
    )
    assert_refused(created, pointer="/data/attributes/email")
    updated = state_env.client.patch(
        "/api/v2/organizations/acme", headers=state_env.auth, json=doc("organizations", email=email)
    )
    assert_refused(updated, pointer="/data/attributes/email")
    setting = state_env.client.patch(
        "/api/v2/organizations/acme", headers=state_env.auth, json=doc("organizations", **{"session-timeout": "x" * MB})
    )
    assert_refused(setting, pointer="/data/attributes/session-timeout")
    name = state_env.client.post(
        "/api/v2/organizations", headers=state_env.auth, json=doc("organizations", name=42, email="a@b.c")
    )
    assert_refused(name, (422,), "/data/attributes/name")
    assert table_snapshot(state_env.container) == before


def test_token_description_past_its_limit(state_env: Env) -> None:
    before = table_snapshot(state_env.container)
    response = state_env.client.post(
        f"/api/v2/users/{state_env.principal.subject_id}/authentication-tokens",
        headers=state_env.auth,
        json=doc("authentication-tokens", description="d" * MB),
    )
    assert_refused(response, pointer="/data/attributes/description")
    assert table_snapshot(state_env.container) == before


@pytest.fixture
def run_env() -> RunEnv:
    return make_run_env()


def _run_body(env: RunEnv, cv_id: str, **attributes: Any) -> dict[str, Any]:
    return {
        "data": {
            "type": "runs",
            "attributes": attributes,
            "relationships": {
                "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}},
                "configuration-version": {"data": {"type": "configuration-versions", "id": cv_id}},
            },
        }
    }


@pytest.mark.parametrize(
    ("attributes", "pointer"),
    [
        ({"message": "m" * MB}, "/data/attributes/message"),
        (
            {"variables": [{"key": f"v{i}", "value": '"' + "x" * 200 + '"'} for i in range(2000)]},
            "/data/attributes/variables",
        ),
        ({"variables": [{"key": "k" * 1000, "value": "1"}]}, "/data/attributes/variables"),
        ({"variables": [{"key": "k", "value": '"' + "x" * MB + '"'}]}, "/data/attributes/variables"),
        ({"target-addrs": ["null_resource.x" + "y" * 1000] * 2000}, "/data/attributes/target-addrs"),
        ({"replace-addrs": ["null_resource.x" + "y" * 900] * 100}, "/data/attributes/replace-addrs"),
        (
            {"variables": [{"key": f"v{i}", "value": '"' + "x" * 4000 + '"'} for i in range(50)]},
            "/data/attributes/variables",
        ),
    ],
)
def test_run_attributes_past_their_limit(run_env: RunEnv, attributes: dict[str, Any], pointer: str) -> None:
    cv_id = run_env.upload_config()
    assert run_env.api("GET", f"/configuration-versions/{cv_id}").json()["data"]["attributes"]["status"] == "uploaded"
    before = table_snapshot(run_env.container)
    response = run_env.api("POST", "/runs", _run_body(run_env, cv_id, **attributes))
    assert_refused(response, pointer=pointer)
    assert table_snapshot(run_env.container) == before
    assert run_env.queued() == []


def test_the_table_guard_refuses_an_item_past_400kb_through_the_api(state_env: Env) -> None:
    """No field limit covers 5,000 tags: the table adapter's item-size guard answers 413 and nothing changes."""
    before = table_snapshot(state_env.container)
    tags = [{"type": "tags", "attributes": {"name": f"t{i:04d}-" + "x" * 80}} for i in range(5000)]
    response = state_env.client.post(
        f"/api/v2/workspaces/{state_env.ws_id}/relationships/tags", headers=state_env.auth, json={"data": tags}
    )
    assert_refused(response, (413,))
    assert str(limits.ITEM_MAX_BYTES) in response.json()["errors"][0]["detail"]
    assert table_snapshot(state_env.container) == before


def test_numbers_the_table_cannot_store_are_refused(state_env: Env) -> None:
    before = table_snapshot(state_env.container)
    for raw in (
        b'{"data":{"type":"workspaces","attributes":{"setting-overwrites":{"x":1e400}}}}',
        b'{"data":{"type":"workspaces","attributes":{"setting-overwrites":{"x":NaN}}}}',
        b'{"data":{"type":"workspaces","attributes":{"setting-overwrites":{"x":' + b"9" * 60 + b"}}}}",
    ):
        response = state_env.client.patch(f"/api/v2/workspaces/{state_env.ws_id}", headers=state_env.auth, content=raw)
        assert_refused(response, (422,))
    assert table_snapshot(state_env.container) == before
