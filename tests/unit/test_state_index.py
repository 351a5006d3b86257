"""Outputs per version, the resource index of current states, and the organization-wide search."""

from __future__ import annotations

from state_helpers import Env, null_resource, other_user, state_bytes
from table_items import memory_items
from terrace.domain.principal import PrincipalKind

OUTPUTS = {
    "name": {"value": "web", "type": "string"},
    "password": {"value": "hunter2", "type": "string", "sensitive": True},
    "ports": {"value": [80, 443], "type": ["list", "number"]},
}


def _arn_resource() -> dict:
    return {
        "mode": "managed",
        "type": "aws_s3_bucket",
        "name": "logs",
        "module": "module.store",
        "provider": 'provider["registry.terraform.io/hashicorp/aws"]',
        "instances": [{"attributes": {"id": "acme-logs", "arn": "arn:aws:s3:::acme-logs"}}],
    }


def test_outputs_lists_hide_sensitive_values_and_single_get_reveals(state_env: Env) -> None:
    env = state_env
    env.lock()
    sv = env.push(state_bytes(1, outputs=OUTPUTS), 1).json()["data"]
    r = env.client.get(f"/api/v2/state-versions/{sv['id']}/outputs?page[size]=2", headers=env.auth)
    assert r.status_code == 200 and r.json()["meta"]["pagination"]["total-count"] == 3
    listed = {
        o["attributes"]["name"]: o
        for o in env.client.get(
            f"/api/v2/workspaces/{env.ws_id}/current-state-version-outputs", headers=env.auth
        ).json()["data"]
    }
    assert listed["password"]["type"] == "state-version-outputs" and listed["password"]["id"].startswith("wos-")
    assert listed["password"]["attributes"]["value"] is None and listed["password"]["attributes"]["sensitive"]
    assert listed["name"]["attributes"] == {
        "name": "name",
        "sensitive": False,
        "type": "string",
        "value": "web",
        "detailed-type": "string",
    }
    assert listed["ports"]["attributes"]["type"] == "array"
    assert listed["ports"]["attributes"]["detailed-type"] == ["list", "number"]
    one = env.client.get(f"/api/v2/state-version-outputs/{listed['password']['id']}", headers=env.auth)
    assert one.status_code == 200 and one.json()["data"]["attributes"]["value"] == "hunter2"
    token, _ = other_user(env)
    assert (
        env.client.get(
            f"/api/v2/state-version-outputs/{listed['password']['id']}", headers={"Authorization": f"Bearer {token}"}
        ).status_code
        == 404
    )


def test_run_token_of_other_workspace_sees_outputs_only_with_global_remote_state(state_env: Env) -> None:
    env = state_env
    env.lock()
    env.push(state_bytes(1, outputs=OUTPUTS), 1)
    other_ws = env.new_workspace("consumer")
    run_token = env.container.accounts.issue_token(
        PrincipalKind.RUN, "run-abc", organization=env.org, workspace_id=other_ws
    ).secret
    headers = {"Authorization": f"Bearer {run_token}"}
    path = f"/api/v2/workspaces/{env.ws_id}/current-state-version-outputs"
    assert (
        env.client.get(path, headers=headers).status_code == 404
    )  # another workspace that does not share its state is hidden
    env.client.patch(
        f"/api/v2/workspaces/{env.ws_id}",
        headers=env.auth,
        json={"data": {"type": "workspaces", "attributes": {"global-remote-state": True}}},
    )
    assert env.client.get(path, headers=headers).status_code == 200


def test_resource_index_follows_the_current_version(state_env: Env) -> None:
    env = state_env
    env.lock()
    first = env.push(
        state_bytes(1, resources=[null_resource("a", "id-a"), null_resource("b", "id-b", count=2)]), 1
    ).json()["data"]["id"]
    rows = env.client.get(f"/api/v2/workspaces/{env.ws_id}/resources", headers=env.auth).json()["data"]
    assert sorted(r["attributes"]["address"] for r in rows) == [
        "null_resource.a",
        "null_resource.b[0]",
        "null_resource.b[1]",
    ]
    a = next(r for r in rows if r["attributes"]["address"] == "null_resource.a")
    assert a["type"] == "resources"
    assert a["attributes"]["provider"] == "hashicorp/null" and a["attributes"]["provider-type"] == "null_resource"
    assert a["attributes"]["module"] == "root" and a["attributes"]["modified-by-state-version-id"] == first
    assert a["attributes"]["name"] == "a" and a["attributes"]["name-index"] is None
    second = env.push(state_bytes(2, resources=[null_resource("a", "id-a"), null_resource("c", "id-c")]), 2).json()[
        "data"
    ]["id"]
    rows = {
        r["attributes"]["address"]: r["attributes"]
        for r in env.client.get(f"/api/v2/workspaces/{env.ws_id}/resources", headers=env.auth).json()["data"]
    }
    assert sorted(rows) == ["null_resource.a", "null_resource.c"]
    assert rows["null_resource.a"]["modified-by-state-version-id"] == first  # unchanged instance
    assert rows["null_resource.c"]["modified-by-state-version-id"] == second
    assert env.ws().resource_count == 2


def test_stale_index_items_are_never_shown(state_env: Env) -> None:
    """Items indexed from a version that is no longer current (a half-finished replace) stay hidden."""
    env = state_env
    env.lock()
    env.push(state_bytes(1, resources=[null_resource("a", "1")]), 1)
    env.container.table.put(
        {
            "pk": f"{env.ws_id}#resources",
            "sk": "null_resource.ghost",
            "workspace_id": env.ws_id,
            "name": "ghost",
            "type": "null_resource",
            "module": "root",
            "provider": "hashicorp/null",
            "ids": [],
            "created_at": "x",
            "updated_at": "x",
            "modified_by": "sv-old",
            "indexed_from": "sv-old",
            "gsi1pk": f"org#{env.org}#resources",
            "gsi1sk": f"{env.ws_id}#null_resource.ghost",
        }
    )
    rows = env.client.get(f"/api/v2/workspaces/{env.ws_id}/resources", headers=env.auth).json()["data"]
    assert [r["attributes"]["address"] for r in rows] == ["null_resource.a"]
    hits = env.client.get(f"/api/v2/organizations/{env.org}/resources?q=ghost", headers=env.auth).json()["data"]
    assert hits == []


def test_org_search_matches_address_type_provider_module_and_ids(state_env: Env) -> None:
    env = state_env
    env.lock()
    env.push(state_bytes(1, resources=[null_resource("web", "i-123"), _arn_resource()]), 1)
    ws2 = env.new_workspace("staging")
    env.lock(ws2)
    env.push(state_bytes(1, lineage="l2", resources=[null_resource("web", "i-999")]), 1, ws_id=ws2, lineage="l2")

    def search(query: str) -> list[tuple[str, str]]:
        r = env.client.get(f"/api/v2/organizations/{env.org}/resources?{query}", headers=env.auth)
        assert r.status_code == 200, r.text
        return sorted((h["attributes"]["workspace-name"], h["attributes"]["address"]) for h in r.json()["data"])

    assert search("q=null_resource.web") == [("prod", "null_resource.web"), ("staging", "null_resource.web")]
    assert search("q=ARN:AWS:S3:::ACME") == [("prod", "module.store.aws_s3_bucket.logs")]
    assert search("q=i-999") == [("staging", "null_resource.web")]
    assert search("q=module.store") == [("prod", "module.store.aws_s3_bucket.logs")]
    assert search("filter[type]=aws_s3_bucket") == [("prod", "module.store.aws_s3_bucket.logs")]
    assert search("filter[provider]=hashicorp/null&q=web") == [
        ("prod", "null_resource.web"),
        ("staging", "null_resource.web"),
    ]
    assert search("q=nothing-matches") == []
    hit = env.client.get(f"/api/v2/organizations/{env.org}/resources?q=i-999", headers=env.auth).json()["data"][0]
    assert hit["relationships"]["workspace"]["data"]["id"] == ws2
    token, _ = other_user(env)
    assert (
        env.client.get(
            f"/api/v2/organizations/{env.org}/resources?q=web", headers={"Authorization": f"Bearer {token}"}
        ).status_code
        == 404
    )


def test_safe_delete_refuses_while_resources_exist(state_env: Env) -> None:
    env = state_env
    env.lock()
    env.push(state_bytes(1, resources=[null_resource("a", "1")]), 1)
    env.client.post(f"/api/v2/workspaces/{env.ws_id}/actions/unlock", headers=env.auth)
    r = env.client.post(f"/api/v2/workspaces/{env.ws_id}/actions/safe-delete", headers=env.auth)
    assert r.status_code == 409 and "resources" in r.text


def test_purge_removes_versions_outputs_blobs_and_index(state_env: Env) -> None:
    env = state_env
    env.lock()
    env.push(state_bytes(1, outputs=OUTPUTS, resources=[null_resource("a", "1")]), 1)
    env.container.state_store.delete_all_of(workspace=env.ws_id)
    table = memory_items(env.container.table)
    assert not [k for k, v in table.items() if k[1] in ("sv", "wos") or k[0].endswith("#resources")]
    assert not env.container.blobs.objects


def test_workspace_resources_name_module_paths_as_hcp_does(state_env: Env) -> None:
    """`/workspaces/:id/resources` shows a module's resource as HCP does (go-tfe v1.109's TestWorkspaceResourcesList):
    the address and module without their `module.` steps; the organization's resource search keeps the full address."""
    env = state_env
    env.lock()
    env.push(state_bytes(1, resources=[null_resource("this", "id-m", module="module.media_bucket", count=1)]), 1)
    (row,) = env.client.get(f"/api/v2/workspaces/{env.ws_id}/resources", headers=env.auth).json()["data"]
    assert row["attributes"]["address"] == "media_bucket.null_resource.this[0]"
    assert row["attributes"]["module"] == "media_bucket" and row["attributes"]["name"] == "this"
