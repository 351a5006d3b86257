"""State pages of the web UI (list, one version, diff, download, roll back) and the state diff itself."""

from __future__ import annotations

import re
from typing import Any

import pytest
from state_helpers import Env, make_env, null_resource, other_user, state_bytes
from terrace.domain.state_diff import SENSITIVE, diff
from test_web_ui import browser, csrf_of, signed_in
from ui_helpers import sign_in

WS = "/app/acme/workspaces/prod"


def secret_resource(password: str) -> dict[str, Any]:
    return {
        "mode": "managed",
        "type": "db",
        "name": "main",
        "provider": 'provider["registry.terraform.io/acme/db"]',
        "instances": [
            {
                "attributes": {"id": "db-1", "password": password, "tags": {"env": "dev"}},
                "sensitive_attributes": [[{"type": "get_attr", "value": "password"}]],
            }
        ],
    }


def two_versions(env: Env) -> tuple[str, str]:
    env.lock()
    first = state_bytes(
        1, resources=[null_resource("a", "111"), null_resource("b", "222")], outputs={"x": {"value": 1}}
    )
    second_res = [null_resource("a", "111-new"), null_resource("c", "333")]
    second = state_bytes(2, resources=second_res, outputs={"x": {"value": 2}})
    ids = [env.push(raw, serial).json()["data"]["id"] for serial, raw in ((1, first), (2, second))]
    env.container.locks.unlock(env.principal, env.ws())
    env.drain_events()
    return ids[0], ids[1]


def test_diff_lists_added_removed_changed_and_masks_sensitive_values() -> None:
    before = {"resources": [secret_resource("old-pass"), null_resource("gone", "1")], "outputs": {}}
    after = {
        "resources": [secret_resource("new-pass"), null_resource("new", "2")],
        "outputs": {"token": {"value": "tok", "sensitive": True}},
    }
    changes = diff(before, after)
    assert [r.address for r in changes.added] == ["null_resource.new"]
    assert [r.address for r in changes.removed] == ["null_resource.gone"]
    [changed] = changes.changed
    assert changed.address == "db.main"
    assert [(c.path, c.before, c.after) for c in changed.changes] == [("password", SENSITIVE, SENSITIVE)]
    assert [(c.path, c.before, c.after) for c in changes.outputs] == [("token", None, SENSITIVE)]
    assert "old-pass" not in repr(changes) and "new-pass" not in repr(changes) and "'tok'" not in repr(changes)
    nested = diff({"resources": [secret_resource("p")]}, {"resources": [secret_resource("p")]})
    assert nested.empty


def test_states_list_is_empty_first() -> None:
    env = make_env()
    page = signed_in(env).get(f"{WS}/states")
    assert page.status_code == 200 and "No state yet" in page.text


@pytest.fixture
def env() -> Env:
    return make_env()


def test_list_view_and_diff_two_versions(env: Env) -> None:
    first, second = two_versions(env)
    client = signed_in(env)
    listing = client.get(f"{WS}/states").text
    assert first in listing and second in listing and "Compare" in listing
    one = client.get(f"{WS}/states/{first}").text
    assert "null_resource.b" in one and "222" in one and "Roll back to this version" in one
    assert "Roll back to this version" not in client.get(f"{WS}/states/{second}").text  # current
    page = client.get(f"{WS}/states/diff", params={"before": first, "after": second})
    assert page.status_code == 200
    added, removed, changed = (page.text.index(h) for h in ("Added (1)", "Removed (1)", "Changed (1)"))
    assert "null_resource.c" in page.text[added:removed] and "null_resource.b" in page.text[removed:changed]
    assert re.search(r"<code>id</code>.*&#34;111&#34;.*&#34;111-new&#34;", page.text[changed:], re.S)


def test_download_streams_the_raw_state(env: Env) -> None:
    first, _ = two_versions(env)
    r = signed_in(env).get(f"{WS}/states/{first}/download")
    assert r.status_code == 200 and 'filename="prod-1.tfstate"' in r.headers["content-disposition"]
    assert r.json()["serial"] == 1 and r.json()["resources"][1]["name"] == "b"


def test_rollback_needs_confirmation_and_csrf_then_restores(env: Env) -> None:
    first, second = two_versions(env)
    client = signed_in(env)
    confirm = client.get(f"{WS}/states/{first}/rollback")
    assert confirm.status_code == 200 and "Roll back to serial 1?" in confirm.text
    assert env.ws().current_state_version_id == second  # showing the confirmation changed nothing
    assert client.post(f"{WS}/states/{first}/rollback", data={}).status_code == 403
    assert env.ws().current_state_version_id == second
    r = client.post(f"{WS}/states/{first}/rollback", data={"csrf_token": csrf_of(confirm.text)})
    assert r.status_code == 303
    ws = env.ws()
    assert ws.current_state_version_id not in (first, second) and ws.state_serial == 3 and ws.lock is None
    env.drain_events()
    restored = client.get(r.headers["location"]).text
    assert "State serial 3" in restored and "null_resource.b" in restored


def test_rollback_keeps_a_lock_the_user_already_held(env: Env) -> None:
    first, _ = two_versions(env)
    client = signed_in(env)
    env.lock()  # taken through the API by the same user: the rollback may write, and the lock stays
    confirm = client.get(f"{WS}/states/{first}/rollback")
    r = client.post(f"{WS}/states/{first}/rollback", data={"csrf_token": csrf_of(confirm.text)})
    assert r.status_code == 303 and env.ws().lock is not None and env.ws().state_serial == 3


def test_another_organizations_user_gets_404_for_states(env: Env) -> None:
    first, _ = two_versions(env)
    token, _ = other_user(env)
    client = browser(env)
    assert sign_in(client, token).status_code == 303
    for path in ("/states", f"/states/{first}", f"/states/{first}/download", f"/states/{first}/rollback"):
        r = client.get(WS + path)
        assert r.status_code == 404 and "text/html" in r.headers["content-type"], path
    csrf = csrf_of(client.get("/app").text)
    assert client.post(f"{WS}/states/{first}/rollback", data={"csrf_token": csrf}).status_code == 404


def test_rollback_refused_inline_while_someone_else_holds_the_lock(env: Env) -> None:
    from terrace.domain.principal import Principal, PrincipalKind

    first, second = two_versions(env)
    admin = env.container.accounts.create_user("root", site_admin=True)
    env.container.locks.lock(Principal(PrincipalKind.USER, admin.id, "root", site_admin=True), env.ws(), "maintenance")
    client = signed_in(env)
    confirm = client.get(f"{WS}/states/{first}/rollback")
    assert "locked by root" in confirm.text
    r = client.post(f"{WS}/states/{first}/rollback", data={"csrf_token": csrf_of(confirm.text)})
    assert r.status_code == 409 and 'role="alert"' in r.text
    assert env.ws().current_state_version_id == second and env.ws().lock.username == "root"
