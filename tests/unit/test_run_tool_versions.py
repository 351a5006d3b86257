"""A run resolves its workspace's terraform-version among the versions runners hold: it runs the newest that
satisfies, and errors at once (listing what there is) when none does; a newer client is not pinned."""

from __future__ import annotations

from run_helpers import RunEnv, make_run_env

CATALOG = "terraform=1.0.3,terraform=1.5.7,opentofu=1.9.4"


def _set_version(env: RunEnv, value: str) -> dict[str, object]:
    body = {"data": {"type": "workspaces", "attributes": {"terraform-version": value}}}
    response = env.api("PATCH", f"/workspaces/{env.workspace_id}", body)
    assert response.status_code == 200, response.text
    return dict(response.json()["data"]["attributes"])


def test_a_constraint_runs_the_newest_held_version() -> None:
    env = make_run_env(tool_downloads=False, tool_catalog=CATALOG)
    _set_version(env, "~> 1.0")
    run = env.create_run(env.upload_config())
    assert run["attributes"]["terraform-version"] == "1.5.7"  # terraform is the default tool
    assert env.claim()["terraform_version"] == "1.5.7"


def test_a_version_no_runner_has_errors_the_run_at_once() -> None:
    env = make_run_env(tool_downloads=False, tool_catalog=CATALOG)
    _set_version(env, "0.12.31")
    run = env.create_run(env.upload_config())
    assert run["attributes"]["status"] == "errored"
    message = run["attributes"]["error-message"]
    assert "0.12.31" in message and "Terraform versions available: Terraform 1.0.3, Terraform 1.5.7" in message
    assert "OpenTofu 1.9.4" not in message  # the workspace's tool (terraform, the default's) only
    assert env.queued() == []  # no job waits for a runner that cannot take it
    next_run = env.create_run(env.upload_config(), **{"terraform-version": "1.0.3"})
    assert next_run["attributes"]["status"] != "errored"  # the errored run released the workspace


def test_without_a_known_catalog_the_runner_decides() -> None:
    env = make_run_env(tool_downloads=False)
    _set_version(env, "0.12.31")
    assert env.create_run(env.upload_config())["attributes"]["status"] != "errored"


def test_a_client_newer_than_every_runner_is_not_pinned_to_its_own_version() -> None:
    env = make_run_env(tool_downloads=False, tool_catalog=CATALOG, default_tool="opentofu")
    assert _set_version(env, "1.12.0")["terraform-version"] == "1.9.4"  # newest held of its major
    assert _set_version(env, "0.11.0")["terraform-version"] == "0.11.0"  # older: kept as asked
    assert _set_version(env, "~> 1.5")["terraform-version"] == "~> 1.5"
    _set_version(env, "latest")
    assert env.create_run(env.upload_config())["attributes"]["terraform-version"] == "1.9.4"  # OpenTofu first


def test_with_downloads_a_run_resolves_among_the_whole_catalog_and_names_its_tool() -> None:
    env = make_run_env(tool_catalog="terraform=1.11.4")  # runners fetch the official releases they lack
    _set_version(env, "1.0.3")
    assert env.create_run(env.upload_config())["attributes"]["terraform-version"] == "1.0.3"
    spec = env.claim()
    assert (spec["terraform_version"], spec["tool"]) == ("1.0.3", "terraform")  # the runner fetches 1.0.3


def test_with_downloads_a_constraint_takes_the_newest_enabled_release() -> None:
    env = make_run_env(tool_catalog="terraform=1.11.4")
    _set_version(env, "~> 1.5.0")
    assert env.create_run(env.upload_config())["attributes"]["terraform-version"] == "1.5.7"
    _set_version(env, "~> 8.0")
    run = env.create_run(env.upload_config())
    assert run["attributes"]["status"] == "errored"
    message = run["attributes"]["error-message"]
    assert "'~> 8.0'" in message and len(message) < 1000  # the whole catalog, named by its series
    assert "available: Terraform 1.0.0 to 1.0.11, Terraform 1.1.0 to 1.1.9," in message
    assert ", Terraform 1.5.0 to 1.5.7," in message and "OpenTofu 1.9.0" not in message
    service = env.container.tool_versions
    service.update("terraform", service.list("terraform", exact="1.5.3")[0].id, {"enabled": False})
    message = env.create_run(env.upload_config())["attributes"]["error-message"]
    assert ", Terraform 1.5.0 to 1.5.2, Terraform 1.5.4 to 1.5.7," in message  # a disabled version breaks a series


def test_with_a_bucket_cache_runners_get_its_urls_and_agents_only_the_read() -> None:
    from test_agent_pools import _agent_mode, _pool, _register, _token

    env = make_run_env(tool_catalog="terraform=1.11.4", tool_blob_cache="arm64")
    _set_version(env, "1.0.3")
    env.create_run(env.upload_config())
    spec = env.claim()
    assert "tools/terraform/1.0.3/terraform_1.0.3_linux_arm64.zip" in spec["tool_cache_url"]
    assert "tools/terraform/1.0.3/terraform_1.0.3_linux_arm64.zip" in spec["tool_cache_upload_url"]
    done = {"runner_id": "r1", "status": "finished", "has_changes": False}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=done).status_code == 200  # the workspace is free
    pool = _pool(env, "vpc")
    assert _agent_mode(env, pool["id"]).status_code == 200
    env.create_run(env.upload_config())
    secret = _token(env, pool["id"])["attributes"]["token"]
    agent_spec = env.claim(_register(env, secret, "vm"), token=secret)
    assert agent_spec["tool_cache_url"] and agent_spec["tool_cache_upload_url"] is None  # an agent writes nothing


def test_the_apply_runs_the_plans_version_even_if_an_admin_disabled_it_meanwhile() -> None:
    env = make_run_env(tool_catalog="terraform=1.11.4")
    _set_version(env, "1.0.3")
    env.create_run(env.upload_config())
    assert env.claim()["tool"] == "terraform"
    tools = env.container.tool_versions
    (record,) = tools.list("terraform", exact="1.0.3")
    tools.update("terraform", record.id, {"enabled": False})
    assert "1.0.3" not in tools.usable_versions("terraform")
    assert tools.tool_of("1.0.3") == "terraform"  # the next phase of a run already on 1.0.3 keeps fetching it
