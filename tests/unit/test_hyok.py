"""Hold Your Own Key through the API (go-tfe v1.109's `Test*OIDCConfiguration*`, `TestHYOKConfiguration*`,
`TestHyokConfiguration*`, `TestHYOKCustomerKeyVersions*`, `TestHYOKEncryptedDataKeyRead`): OIDC configurations of
the four kinds, HYOK configurations whose test reaches the customer's key (the memory twin of the key service here;
KMS and the key file in `tests/contract/test_key_wrapper_contract.py`), key versions and encrypted data keys, and
what revoking does: the data keys of a revoked key version can no longer be opened."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from policy_helpers import call, member
from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_key_wrapper import MemoryKeyWrapper
from terrace.domain.errors import Conflict
from terrace.services.hyok.key_test import EVENT

AWS_ROLE = "arn:aws:iam::123456789012:role/terrace"
KEK = "arn:aws:kms:us-east-1:123456789012:key/team-key"


@pytest.fixture(scope="module")
def env() -> RunEnv:
    return make_run_env()


def _oidc(env: RunEnv, type_: str, **attrs: str) -> Any:
    return env.api("POST", "/organizations/acme/oidc-configurations", {"data": {"type": type_, "attributes": attrs}})


def _aws_oidc(env: RunEnv) -> str:
    created = _oidc(env, "aws-oidc-configurations", **{"role-arn": AWS_ROLE})
    assert created.status_code == 201, created.text
    return str(created.json()["data"]["id"])


def _pool(env: RunEnv) -> str:
    name = f"pool-{secrets.token_hex(4)}"
    answer = env.api(
        "POST", "/organizations/acme/agent-pools", {"data": {"type": "agent-pools", "attributes": {"name": name}}}
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["data"]["id"])


def _hyok(env: RunEnv, oidc_id: str, pool_id: str, label: str, kek: str = KEK, **extra: Any) -> Any:
    attrs = {"name": label, "kek-id": kek, "kms-options": {"key-region": "us-east-1"}, **extra}
    rels = {"oidc-configuration": {"data": {"type": "aws-oidc-configurations", "id": oidc_id}},
            "agent-pool": {"data": {"type": "agent-pools", "id": pool_id}}}  # fmt: skip
    body = {"data": {"type": "hyok-configurations", "attributes": attrs, "relationships": rels}}
    return env.api("POST", "/organizations/acme/hyok-configurations", body)


def _pump(env: RunEnv) -> None:
    """Hands the key tests queued so far to the events consumer (the memory publisher only records them)."""
    queued = [e for e in env.container.publisher.events if e.get("type") == EVENT]  # type: ignore[attr-defined]
    env.container.publisher.events.clear()  # type: ignore[attr-defined]
    for event in queued:
        env.container.events.handle(event)


def test_oidc_configurations_of_the_four_kinds(env: RunEnv) -> None:
    kinds = {
        "aws-oidc-configurations": {"role-arn": AWS_ROLE},
        "azure-oidc-configurations": {"client-id": "c", "subscription-id": "s", "tenant-id": "t"},
        "gcp-oidc-configurations": {"service-account-email": "sa@p.iam.gserviceaccount.com",
                                    "project-number": "123456789012", "workload-provider-name": "projects/1/x"},
        "vault-oidc-configurations": {"address": "https://vault.example.com", "role": "terrace", "namespace": "ns",
                                      "auth-path": "jwt", "encoded-cacert": "LS0t"},
    }  # fmt: skip
    for type_, attrs in kinds.items():
        created = _oidc(env, type_, **attrs)
        assert created.status_code == 201, created.text
        data = created.json()["data"]
        assert data["type"] == type_ and data["attributes"] == attrs
        assert data["relationships"]["organization"]["data"]["id"] == "acme"
        read = env.api("GET", f"/oidc-configurations/{data['id']}").json()["data"]
        assert read["attributes"] == attrs
        first, *rest = attrs
        updated = env.api("PATCH", f"/oidc-configurations/{data['id']}",
                          {"data": {"type": type_, "attributes": {first: "changed"}}})  # fmt: skip
        assert updated.status_code == 200 and updated.json()["data"]["attributes"] == {**attrs, first: "changed"}
        missing = _oidc(env, type_, **{k: v for k, v in attrs.items() if k != first})
        assert missing.status_code == 422 and missing.json()["errors"][0]["source"]["pointer"].endswith(first)
        emptied = env.api("PATCH", f"/oidc-configurations/{data['id']}",
                          {"data": {"type": type_, "attributes": {first: ""}}})  # fmt: skip
        assert emptied.status_code == 422
        assert env.api("DELETE", f"/oidc-configurations/{data['id']}").status_code == 204
        assert env.api("GET", f"/oidc-configurations/{data['id']}").status_code == 404
    assert env.api("GET", "/oidc-configurations/awsoidc-notreal").status_code == 404
    assert _oidc(env, "oidc-configurations", **{"role-arn": AWS_ROLE}).status_code == 422
    assert _oidc(env, "aws-oidc-configurations", **{"role-arn": AWS_ROLE, "secret": "x"}).status_code == 422


def test_only_managers_change_them_and_other_organizations_see_nothing(env: RunEnv) -> None:
    oidc_id = _aws_oidc(env)
    reader = member(env, "hyok-reader")
    assert call(env, reader, "GET", f"/oidc-configurations/{oidc_id}").status_code == 200
    body = {"data": {"type": "aws-oidc-configurations", "attributes": {"role-arn": AWS_ROLE}}}
    assert call(env, reader, "POST", "/organizations/acme/oidc-configurations", body).status_code == 403
    assert call(env, reader, "DELETE", f"/oidc-configurations/{oidc_id}").status_code == 403
    other = make_run_env("globex")
    assert other.api("GET", f"/oidc-configurations/{oidc_id}").status_code == 404
    assert other.api("PATCH", f"/oidc-configurations/{oidc_id}", body).status_code == 404


def test_a_key_that_cannot_be_reached_fails_its_test_then_is_revoked_and_deleted(env: RunEnv) -> None:
    oidc_id, pool_id = _aws_oidc(env), _pool(env)
    created = _hyok(env, oidc_id, pool_id, "unreachable", kek="arn:aws:kms:us-east-1:1:key/this-is-not-a-real-key")
    assert created.status_code == 201, created.text
    data = created.json()["data"]
    assert data["attributes"]["status"] == "untested" and data["attributes"]["kms-options"] == {
        "key-region": "us-east-1"
    }
    assert data["relationships"]["oidc-configuration"]["data"] == {"type": "aws-oidc-configurations", "id": oidc_id}
    assert data["relationships"]["agent-pool"]["data"]["id"] == pool_id
    _pump(env)
    read = env.api("GET", f"/hyok-configurations/{data['id']}").json()["data"]["attributes"]
    assert read["status"] == "test_failed" and "does not exist" in read["error"]
    tested = env.api("POST", f"/hyok-configurations/{data['id']}/actions/test")
    assert tested.status_code == 422 and "does not exist" in tested.json()["errors"][0]["detail"]
    assert env.api("DELETE", f"/oidc-configurations/{oidc_id}").status_code == 409  # still used
    assert env.api("POST", f"/hyok-configurations/{data['id']}/actions/revoke").status_code == 202
    assert env.api("GET", f"/hyok-configurations/{data['id']}").json()["data"]["attributes"]["status"] == "revoked"
    assert env.api("DELETE", f"/hyok-configurations/{data['id']}").status_code == 204
    assert env.api("GET", f"/hyok-configurations/{data['id']}").status_code == 404
    assert env.api("DELETE", f"/oidc-configurations/{oidc_id}").status_code == 204


def test_a_reachable_key_wraps_data_keys_and_a_revoked_version_opens_none(env: RunEnv) -> None:
    wrapper = env.container.key_wrapper
    assert isinstance(wrapper, MemoryKeyWrapper)
    wrapper.add(KEK)
    oidc_id, pool_id = _aws_oidc(env), _pool(env)
    hyok_id = _hyok(env, oidc_id, pool_id, "team").json()["data"]["id"]
    _pump(env)
    hyok = env.api("GET", f"/hyok-configurations/{hyok_id}?include=hyok_customer_key_versions,oidc_configuration")
    document = hyok.json()
    assert document["data"]["attributes"]["status"] == "available", document
    assert {i["type"] for i in document["included"]} == {"hyok-customer-key-versions", "aws-oidc-configurations"}
    versions = env.api("GET", f"/hyok-configurations/{hyok_id}/hyok-customer-key-versions").json()["data"]
    assert [v["attributes"]["key-version"] for v in versions] == [f"{KEK}/1"]
    version_id = versions[0]["id"]
    assert (
        env.api("GET", f"/hyok-customer-key-versions/{version_id}").json()["data"]["attributes"]["status"]
        == "available"
    )
    data_keys = env.container.hyok_store.data_keys_of(version_id)
    assert len(data_keys) == 1
    shown = env.api("GET", f"/hyok-encrypted-data-keys/{data_keys[0].id}").json()["data"]
    assert shown["attributes"]["customer-key-name"] == KEK and shown["attributes"]["encrypted-dek"].startswith("v1:")
    assert len(env.container.hyok_key_versions.open(data_keys[0].id)) == 32

    wrapper.add(KEK)  # the customer rotates the key: the next test records its new version
    assert env.api("POST", f"/hyok-configurations/{hyok_id}/actions/test").status_code == 200
    listed = env.api("GET", f"/hyok-configurations/{hyok_id}/hyok-customer-key-versions").json()["data"]
    assert [v["attributes"]["key-version"] for v in listed] == [f"{KEK}/1", f"{KEK}/2"]

    assert env.api("DELETE", f"/hyok-customer-key-versions/{version_id}").status_code == 409  # not revoked yet
    assert env.api("POST", f"/hyok-customer-key-versions/{version_id}/actions/revoke").status_code == 202
    with pytest.raises(Conflict, match="revoked: what it encrypts can no longer be decrypted"):
        env.container.hyok_key_versions.open(data_keys[0].id)
    assert env.api("DELETE", f"/hyok-configurations/{hyok_id}").status_code == 409  # available: revoke it first
    assert env.api("DELETE", f"/hyok-customer-key-versions/{version_id}").status_code == 204
    assert env.api("GET", f"/hyok-encrypted-data-keys/{data_keys[0].id}").status_code == 404


def test_bad_hyok_configurations_are_refused_with_their_pointer(env: RunEnv) -> None:
    oidc_id, pool_id = _aws_oidc(env), _pool(env)
    for attrs, pointer in (
        ({"kek-id": ""}, "/data/attributes/kek-id"),
        ({"kms-options": {}}, "/data/attributes/kms-options"),
        ({"kms-options": "us-east-1"}, "/data/attributes/kms-options"),
        ({"kms-options": {"key-region": "evil.example/x#"}}, "/data/attributes/kms-options"),
        ({"name": ""}, "/data/attributes/name"),
    ):
        refused = _hyok(env, oidc_id, pool_id, "bad", **attrs)
        assert refused.status_code == 422 and refused.json()["errors"][0]["source"]["pointer"] == pointer, attrs
    no_pool = {"data": {"type": "hyok-configurations", "attributes": {"name": "x", "kek-id": KEK,
        "kms-options": {"key-region": "us-east-1"}}, "relationships": {
        "oidc-configuration": {"data": {"type": "aws-oidc-configurations", "id": oidc_id}}}}}  # fmt: skip
    assert env.api("POST", "/organizations/acme/hyok-configurations", no_pool).status_code == 422
    del no_pool["data"]["relationships"]
    assert env.api("POST", "/organizations/acme/hyok-configurations", no_pool).status_code == 422
    assert _hyok(env, "awsoidc-notreal", pool_id, "x").status_code == 404
    assert _hyok(env, oidc_id, "apool-notreal", "x").status_code == 404
    assert env.api("GET", "/hyok-configurations/hyokc-notreal").status_code == 404
    assert env.api("GET", "/hyok-customer-key-versions/keyv-notreal").status_code == 404
    assert env.api("GET", "/hyok-encrypted-data-keys/dek-notreal").status_code == 404


def test_an_update_changes_the_key_and_tests_it_again(env: RunEnv) -> None:
    oidc_id, pool_id = _aws_oidc(env), _pool(env)
    hyok_id = _hyok(env, oidc_id, pool_id, "to-update", kek="arn:aws:kms:us-east-1:1:key/gone").json()["data"]["id"]
    _pump(env)
    env.container.key_wrapper.add("arn:aws:kms:us-east-2:1:key/new")  # type: ignore[attr-defined]
    other_pool = _pool(env)
    body = {"data": {"type": "hyok-configurations", "attributes": {"name": "renamed",
        "kek-id": "arn:aws:kms:us-east-2:1:key/new", "kms-options": {"key-region": "us-east-2"}},
        "relationships": {"agent-pool": {"data": {"type": "agent-pools", "id": other_pool}}}}}  # fmt: skip
    updated = env.api("PATCH", f"/hyok-configurations/{hyok_id}", body).json()["data"]
    assert updated["attributes"]["name"] == "renamed" and updated["attributes"]["status"] == "untested"
    assert updated["attributes"]["kms-options"] == {"key-region": "us-east-2"}
    assert updated["relationships"]["agent-pool"]["data"]["id"] == other_pool
    _pump(env)
    assert env.api("GET", f"/hyok-configurations/{hyok_id}").json()["data"]["attributes"]["status"] == "available"
    listed = env.api("GET", "/organizations/acme/hyok-configurations?q=renam").json()["data"]
    assert [h["id"] for h in listed] == [hyok_id]


def test_deleting_the_organization_deletes_its_configurations_keys_and_data_keys() -> None:
    env = make_run_env("initech")
    env.container.key_wrapper.add(KEK)  # type: ignore[attr-defined]
    created = env.api("POST", "/organizations/initech/oidc-configurations",
                      {"data": {"type": "aws-oidc-configurations", "attributes": {"role-arn": AWS_ROLE}}})  # fmt: skip
    pool = env.api("POST", "/organizations/initech/agent-pools",
                   {"data": {"type": "agent-pools", "attributes": {"name": "p"}}}).json()["data"]["id"]  # fmt: skip
    rels = {"oidc-configuration": {"data": {"type": "aws-oidc-configurations", "id": created.json()["data"]["id"]}},
            "agent-pool": {"data": {"type": "agent-pools", "id": pool}}}  # fmt: skip
    attrs = {"name": "k", "kek-id": KEK, "kms-options": {"key-region": "us-east-1"}}
    body = {"data": {"type": "hyok-configurations", "attributes": attrs, "relationships": rels}}
    hyok_id = env.api("POST", "/organizations/initech/hyok-configurations", body).json()["data"]["id"]
    assert env.api("POST", f"/hyok-configurations/{hyok_id}/actions/test").status_code == 200
    store = env.container.hyok_store
    (version,) = store.key_versions_of(hyok_id)
    assert store.data_keys_of(version.id)
    assert env.api("DELETE", "/organizations/initech").status_code == 204
    assert (store.oidcs_of("initech"), store.hyoks_of("initech")) == ([], [])
    assert (store.key_versions_of(hyok_id), store.data_keys_of(version.id)) == ([], [])


def test_hyok_is_refused_where_it_would_be_a_promise_terrace_does_not_keep(env: RunEnv) -> None:
    """A workspace's HYOK needs an available primary HYOK configuration (`tests/unit/test_hyok_state.py` turns it on);
    without one it is a 422 naming why, never an answer that claims it (false is kept). Enforcing it for an
    organization is refused likewise."""
    bare = make_run_env("nohyok")  # an organization without a HYOK configuration
    create = {"data": {"type": "workspaces", "attributes": {"name": "secret", "hyok-enabled": True}}}
    refused = bare.api("POST", "/organizations/nohyok/workspaces", create)
    assert refused.status_code == 422, refused.text
    error = refused.json()["errors"][0]
    assert error["source"]["pointer"] == "/data/attributes/hyok-enabled" and "HYOK configuration" in error["detail"]
    update = {"data": {"type": "workspaces", "attributes": {"hyok-enabled": True}}}
    assert bare.api("PATCH", "/organizations/nohyok/workspaces/app", update).status_code == 422
    update["data"]["attributes"]["hyok-enabled"] = "yes"
    assert bare.api("PATCH", "/organizations/nohyok/workspaces/app", update).status_code == 422
    update["data"]["attributes"]["hyok-enabled"] = False
    assert bare.api("PATCH", "/organizations/nohyok/workspaces/app", update).status_code == 200
    enforce = {"data": {"type": "organizations", "attributes": {"enforce-hyok": True}}}
    refused = bare.api("PATCH", "/organizations/nohyok", enforce)
    assert refused.status_code == 422 and "enforce-hyok" in refused.json()["errors"][0]["detail"]
    enforce["data"]["attributes"]["enforce-hyok"] = False
    assert bare.api("PATCH", "/organizations/nohyok", enforce).status_code == 200


def test_the_key_is_reached_as_the_oidc_configuration_with_terraces_workload_identity_token(env: RunEnv) -> None:
    """What the key service is given: the OIDC configuration's role and a token Terrace's issuer signed for this
    configuration (the audience of its kind, a subject naming it), verifiable with the published JWKS."""
    from joserfc import jwt
    from joserfc.jwk import KeySet

    oidc_id, pool_id = _aws_oidc(env), _pool(env)
    hyok_id = _hyok(env, oidc_id, pool_id, "as-role").json()["data"]["id"]
    hyok = env.container.hyok_store.hyok(hyok_id)
    assert hyok is not None
    key = env.container.hyok_key_tester.customer_key(hyok)
    assert (key.kek_id, key.oidc_kind, key.oidc, key.kms_options) == (
        KEK, "aws", {"role-arn": AWS_ROLE}, {"key-region": "us-east-1"},
    )  # fmt: skip
    jwks = env.client.get("/.well-known/jwks").json()
    claims = jwt.decode(key.web_identity_token, KeySet.import_key_set(jwks)).claims
    assert claims["aud"] == "aws.workload.identity" and claims["iss"] == env.container.settings.public_url
    assert claims["sub"] == "organization:acme:hyok_configuration:as-role"
    assert claims["exp"] - claims["iat"] <= 300 and claims["terraform_hyok_configuration_id"] == hyok_id


def test_an_update_racing_the_key_test_is_not_a_conflict(env: RunEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """go-tfe's `TestHYOKConfigurationUpdate` changes a configuration while its key test (on the events queue)
    records its outcome: the change reads again and lands, as the outcome does, rather than a 409."""
    oidc_id, pool_id = _aws_oidc(env), _pool(env)
    hyok_id = _hyok(env, oidc_id, pool_id, "racing", kek="arn:aws:kms:us-east-1:1:key/absent").json()["data"]["id"]
    store, tester = env.container.hyok_store, env.container.hyok_key_tester
    read = store.hyok
    raced: list[str] = []

    def stale_read(identifier: str) -> Any:
        found = read(identifier)
        if identifier == hyok_id and not raced:  # the key test finishes between this read and its write
            raced.append(identifier)
            tester.run(hyok_id)
        return found

    monkeypatch.setattr(store, "hyok", stale_read)
    body = {"data": {"type": "hyok-configurations", "attributes": {"name": "raced"}}}
    updated = env.api("PATCH", f"/hyok-configurations/{hyok_id}", body)
    assert updated.status_code == 200, updated.text
    assert raced and updated.json()["data"]["attributes"] == {
        **updated.json()["data"]["attributes"], "name": "raced", "status": "test_failed"}  # fmt: skip
    revoked = env.api("POST", f"/hyok-configurations/{hyok_id}/actions/revoke")
    assert revoked.status_code == 202 and revoked.json()["data"]["attributes"]["status"] == "revoked"


def test_an_agent_pool_includes_its_hyok_configurations(env: RunEnv) -> None:
    oidc_id, pool_id = _aws_oidc(env), _pool(env)
    hyok_id = _hyok(env, oidc_id, pool_id, "pooled").json()["data"]["id"]
    plain = env.api("GET", f"/agent-pools/{pool_id}").json()
    assert "hyok-configurations" not in plain["data"]["relationships"] and "included" not in plain
    read = env.api("GET", f"/agent-pools/{pool_id}?include=hyok-configurations").json()
    assert read["data"]["relationships"]["hyok-configurations"]["data"] == [
        {"type": "hyok-configurations", "id": hyok_id}]  # fmt: skip
    assert [(i["type"], i["attributes"]["name"]) for i in read["included"]] == [("hyok-configurations", "pooled")]
