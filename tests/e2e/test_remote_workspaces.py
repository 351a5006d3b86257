"""Terraform 1.0.3's `remote` backend against the local stack: init, workspaces with a prefix, locking.

These need no state storage: terraform stops at the lock before it reads or writes any state.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

OUTPUTS_ONLY = 'output "greeting" {\n  value = "hello"\n}\n'


def test_init_against_existing_workspace(stack, api, terraform, unique):
    name = unique("init")
    api.create_workspace(name)
    tf = terraform(stack.remote_backend(name=name) + OUTPUTS_ONLY)

    result = tf.init()

    assert "Terraform has been successfully initialized" in result.output


def test_init_creates_a_missing_workspace(stack, api, terraform, unique):
    name = unique("created")
    tf = terraform(stack.remote_backend(name=name) + OUTPUTS_ONLY)

    tf.init()

    ws = api.workspace(name)
    assert ws["attributes"]["name"] == name
    assert ws["attributes"]["execution-mode"] == "local"  # the test organization's default


def test_workspace_new_list_select_with_prefix(stack, api, terraform, unique):
    prefix = unique("app") + "-"
    api.create_workspace(prefix + "alpha")
    api.create_workspace(prefix + "beta")
    api.create_workspace(unique("other"))  # outside the prefix: never listed
    tf = terraform(stack.remote_backend(prefix=prefix) + OUTPUTS_ONLY)
    tf.init(extra_env={"TF_WORKSPACE": "alpha"})

    listed = tf.run("workspace", "list").output.split()
    assert sorted(n for n in listed if n != "*") == ["alpha", "beta"]

    tf.run("workspace", "new", "gamma")
    assert api.workspace(prefix + "gamma")["attributes"]["name"] == prefix + "gamma"
    assert tf.run("workspace", "show").output.strip() == "gamma"

    tf.run("workspace", "select", "beta")
    assert tf.run("workspace", "show").output.strip() == "beta"
    listed = tf.run("workspace", "list").output
    assert "* beta" in listed
    assert {"alpha", "beta", "gamma"} <= set(listed.split())

    missing = tf.run("workspace", "select", "nope", check=False)
    assert missing.code != 0


def test_apply_refused_while_the_api_holds_the_lock(stack, api, terraform, unique):
    name = unique("locked")
    ws_id = api.create_workspace(name)["id"]
    tf = terraform(stack.remote_backend(name=name) + OUTPUTS_ONLY)
    tf.init()
    api.lock(ws_id, "maintenance")

    result = tf.apply("-lock-timeout=0s", check=False)

    assert result.code != 0
    assert "Error acquiring the state lock" in result.output
    assert "already locked" in result.output
    ws = api.workspace(name)
    assert ws["attributes"]["locked"] is True  # terraform did not steal or drop the lock
    api.unlock(ws_id)
    assert api.workspace(name)["attributes"]["locked"] is False


def test_force_unlock_releases_a_lock_taken_through_the_api(stack, api, terraform, unique):
    name = unique("force")
    ws_id = api.create_workspace(name)["id"]
    tf = terraform(stack.remote_backend(name=name) + OUTPUTS_ONLY)
    tf.init()
    api.lock(ws_id)

    result = tf.run("force-unlock", "-force", f"{stack.organization}/{name}")

    assert "successfully unlocked" in result.output
    assert api.workspace(name)["attributes"]["locked"] is False
    again = tf.run("force-unlock", "-force", f"{stack.organization}/{name}", check=False)
    assert again.code != 0  # nothing left to unlock
