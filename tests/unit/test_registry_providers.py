"""The private provider registry through the API go-tfe calls (providers, versions with their SHA256SUMS and
signature uploads, platforms with their zips, GPG keys), the files' landing (recorded, or refused past the limits or
with another SHA-256 than declared), the provider registry protocol terraform calls (versions, a download with
the signed URLs and the signing key), deletes, and who may do what (members read and install, `manage-providers`
publishes, other organizations see 404)."""

from __future__ import annotations

import hashlib
from typing import Any

import pysequoia
from run_helpers import RunEnv, join, make_run_env
from table_items import memory_items
from terrace.domain.principal import PrincipalKind
from terrace.domain.registry_providers import SHASUMS_MAX_BYTES

BASE = "/organizations/acme/registry-providers"
PRIVATE = f"{BASE}/private/acme/hello"
ZIP = b"PK\x03\x04 a provider zip"


def _key() -> tuple[str, str]:
    """A fresh OpenPGP key: (its public armor, its 16-digit key ID)."""
    cert = pysequoia.Tsk.generate("Publisher <publisher@example.com>").extract_certificate()
    return str(cert), cert.fingerprint.upper()[-16:]


def _provider(env: RunEnv, name: str = "hello", registry: str = "private", namespace: str = "acme") -> Any:
    attrs = {"name": name, "namespace": namespace, "registry-name": registry}
    return env.api("POST", BASE, {"data": {"type": "registry-providers", "attributes": attrs}})


def _add_key(env: RunEnv, armor: str, namespace: str = "acme", headers: dict[str, str] | None = None) -> Any:
    body = {"data": {"type": "gpg-keys", "attributes": {"namespace": namespace, "ascii-armor": armor}}}
    return env.client.post("/api/registry/private/v2/gpg-keys", json=body, headers=headers or env.headers)


def _upload_key(url: str) -> str:
    return url.split("memory://blobs/")[1].split("?")[0]


def _publish(env: RunEnv, version: str, key_id: str, zip_data: bytes = ZIP) -> dict[str, Any]:
    """A version with its SHA256SUMS, signature and a linux_amd64 zip, each landed."""
    attrs = {"version": version, "key-id": key_id, "protocols": ["5.0"]}
    body = {"data": {"type": "registry-provider-versions", "attributes": attrs}}
    created = env.api("POST", f"{PRIVATE}/versions", body)
    assert created.status_code == 201, created.text
    links = created.json()["data"]["links"]
    shasum = hashlib.sha256(zip_data).hexdigest()
    filename = f"terraform-provider-hello_{version}_linux_amd64.zip"
    env.land(_upload_key(links["shasums-upload"]), f"{shasum}  {filename}\n".encode())
    env.land(_upload_key(links["shasums-sig-upload"]), b"a detached signature")
    attrs = {"os": "linux", "arch": "amd64", "shasum": shasum, "filename": filename}
    body = {"data": {"type": "registry-provider-platforms", "attributes": attrs}}
    platform = env.api("POST", f"{PRIVATE}/versions/{version}/platforms", body)
    assert platform.status_code == 201, platform.text
    env.land(_upload_key(platform.json()["data"]["links"]["provider-binary-upload"]), zip_data)
    read = env.api("GET", f"{PRIVATE}/versions/{version}/platforms/linux/amd64")
    assert read.status_code == 200 and read.json()["data"]["attributes"]["provider-binary-uploaded"], read.text
    return dict(read.json()["data"])


def _registry(env: RunEnv, path: str, headers: dict[str, str] | None = None) -> Any:
    return env.client.get(f"/api/registry/v1/providers/{path}", headers=env.headers if headers is None else headers)


def test_discovery_advertises_the_provider_registry() -> None:
    env = make_run_env()
    assert env.client.get("/.well-known/terraform.json").json()["providers.v1"] == "/api/registry/v1/providers/"


def test_publish_a_version_and_download_it_through_the_protocol() -> None:
    env = make_run_env()
    created = _provider(env)
    assert created.status_code == 201, created.text
    provider = created.json()["data"]
    assert provider["id"].startswith("prov-") and provider["attributes"]["permissions"] == {"can-delete": True}
    assert provider["relationships"]["organization"]["data"]["id"] == "acme"
    assert _provider(env).status_code == 409  # one provider per address
    armor, key_id = _key()
    key = _add_key(env, armor)
    assert key.status_code == 201, key.text
    assert key.json()["data"]["attributes"]["key-id"] == key_id  # computed from the armor
    assert _registry(env, "acme/hello/versions").json()["versions"] == []

    pending = env.api("POST", f"{PRIVATE}/versions", {"data": {"type": "registry-provider-versions",
                      "attributes": {"version": "0.9.0", "key-id": key_id}}}).json()["data"]  # fmt: skip
    assert set(pending["links"]) == {"shasums-upload", "shasums-sig-upload"}
    assert not pending["attributes"]["shasums-uploaded"]
    _publish(env, "1.0.0", key_id)
    version = env.api("GET", f"{PRIVATE}/versions/1.0.0").json()["data"]
    assert version["attributes"]["shasums-uploaded"] and version["attributes"]["shasums-sig-uploaded"]
    assert set(version["links"]) == {"shasums-download", "shasums-sig-download"}  # no second upload

    listed = _registry(env, "acme/hello/versions").json()
    assert listed["versions"] == [
        {"version": "1.0.0", "protocols": ["5.0"], "platforms": [{"os": "linux", "arch": "amd64"}]}
    ]
    download = _registry(env, "acme/hello/1.0.0/download/linux/amd64")
    assert download.status_code == 200, download.text
    found = download.json()
    assert found["shasum"] == hashlib.sha256(ZIP).hexdigest() and found["protocols"] == ["5.0"]
    assert found["filename"] == "terraform-provider-hello_1.0.0_linux_amd64.zip"
    assert found["signing_keys"]["gpg_public_keys"][0] == {
        "key_id": key_id, "ascii_armor": armor, "trust_signature": "", "source": "", "source_url": None}  # fmt: skip
    for field in ("download_url", "shasums_url", "shasums_signature_url"):
        assert env.blobs.get(_upload_key(found[field])), field
    assert _registry(env, "acme/hello/0.9.0/download/linux/amd64").status_code == 404  # nothing uploaded
    assert _registry(env, "acme/hello/1.0.0/download/darwin/arm64").status_code == 404

    read = env.api("GET", f"{PRIVATE}?include=registry-provider-versions").json()
    assert sorted(v["attributes"]["version"] for v in read["included"]) == ["0.9.0", "1.0.0"]
    assert len(read["data"]["relationships"]["registry-provider-versions"]["data"]) == 2


def test_a_zip_with_another_sha256_or_files_past_their_limits_are_refused() -> None:
    env = make_run_env()
    _provider(env)
    attrs = {"version": "1.0.0", "key-id": "ABCDEF0123456789"}
    links = env.api("POST", f"{PRIVATE}/versions", {"data": {"type": "registry-provider-versions",
                    "attributes": attrs}}).json()["data"]["links"]  # fmt: skip
    env.land(_upload_key(links["shasums-upload"]), b"x" * (SHASUMS_MAX_BYTES + 1))
    version = env.api("GET", f"{PRIVATE}/versions/1.0.0").json()["data"]
    assert not version["attributes"]["shasums-uploaded"] and "shasums-upload" in version["links"]  # try again
    assert not [k for k in env.blobs.objects if k.endswith("SHA256SUMS")]
    attrs = {"os": "linux", "arch": "amd64", "shasum": hashlib.sha256(b"the real one").hexdigest(), "filename": "p.zip"}
    body = {"data": {"type": "registry-provider-platforms", "attributes": attrs}}
    platform = env.api("POST", f"{PRIVATE}/versions/1.0.0/platforms", body).json()["data"]
    env.land(_upload_key(platform["links"]["provider-binary-upload"]), b"a tampered one")
    read = env.api("GET", f"{PRIVATE}/versions/1.0.0/platforms/linux/amd64").json()["data"]
    assert not read["attributes"]["provider-binary-uploaded"] and "provider-binary-upload" in read["links"]
    assert not [k for k in env.blobs.objects if k.endswith(".zip")]


def test_input_errors_are_422_with_hcp_terraform_texts() -> None:
    env = make_run_env()
    missing = env.api(
        "POST", BASE, {"data": {"type": "registry-providers", "attributes": {"name": "n", "namespace": "acme"}}}
    )
    assert missing.status_code == 422
    assert [e["detail"] for e in missing.json()["errors"]] == [
        "Registry name can't be blank", "Registry name is not included in the list"]  # fmt: skip
    assert _provider(env, registry="other").status_code == 422
    assert _provider(env, name="bad name").status_code == 422
    assert _provider(env, namespace="someone-else").status_code == 422  # a private namespace is the organization
    _provider(env)
    for attrs in ({"version": "one", "key-id": "K"}, {"version": "1.0.0"}, {"version": "1.0.0", "key-id": "K",
                                                                               "protocols": "5.0"}):  # fmt: skip
        body = {"data": {"type": "registry-provider-versions", "attributes": attrs}}
        assert env.api("POST", f"{PRIVATE}/versions", body).status_code == 422, attrs
    body = {"data": {"type": "registry-provider-versions", "attributes": {"version": "1.0.0", "key-id": "K"}}}
    assert env.api("POST", f"{PRIVATE}/versions", body).status_code == 201
    assert env.api("POST", f"{PRIVATE}/versions", body).status_code == 409
    for attrs in ({"os": "linux", "arch": "amd64", "shasum": "abc", "filename": "../x"},
                  {"os": "linux/x", "arch": "amd64", "shasum": "abc", "filename": "x.zip"},
                  {"os": "linux", "arch": "amd64", "filename": "x.zip"}):  # fmt: skip
        body = {"data": {"type": "registry-provider-platforms", "attributes": attrs}}
        assert env.api("POST", f"{PRIVATE}/versions/1.0.0/platforms", body).status_code == 422, attrs
    assert _add_key(env, "not a key").status_code == 422
    broken = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxx\n-----END PGP PUBLIC KEY BLOCK-----\n"
    assert _add_key(env, broken).status_code == 422
    secret = pysequoia.Tsk.generate("S <s@example.com>")
    refused = _add_key(env, str(secret))
    assert refused.status_code == 422 and "secret key" in refused.text
    armor, _ = _key()
    assert _add_key(env, armor).status_code == 201
    assert _add_key(env, armor).status_code == 409


def test_gpg_keys_read_list_move_and_delete() -> None:
    env = make_run_env()
    armor, key_id = _key()
    _add_key(env, armor)
    keys = "/api/registry/private/v2/gpg-keys"
    listed = env.client.get(f"{keys}?filter[namespace]=acme", headers=env.headers).json()["data"]
    assert [k["attributes"]["key-id"] for k in listed] == [key_id]
    assert env.client.get(f"{keys}", headers=env.headers).status_code == 422
    read = env.client.get(f"{keys}/acme/{key_id}", headers=env.headers)
    assert read.status_code == 200 and read.json()["data"]["attributes"]["ascii-armor"] == armor
    assert env.client.get(f"/api/registry/public/v2/gpg-keys/acme/{key_id}", headers=env.headers).status_code == 404
    body = {"data": {"type": "gpg-keys", "attributes": {"namespace": "nowhere"}}}
    moved = env.client.patch(f"{keys}/acme/{key_id}", json=body, headers=env.headers)
    assert moved.status_code == 422 and "namespace not authorized" in moved.text
    other = {"data": {"type": "organizations", "attributes": {"name": "beta", "email": "b@example.com"}}}
    assert env.api("POST", "/organizations", other).status_code == 201
    body = {"data": {"type": "gpg-keys", "attributes": {"namespace": "beta"}}}
    moved = env.client.patch(f"{keys}/acme/{key_id}", json=body, headers=env.headers)
    assert moved.status_code == 200 and moved.json()["data"]["attributes"]["namespace"] == "beta"
    assert env.client.get(f"{keys}/acme/{key_id}", headers=env.headers).status_code == 404
    assert env.client.delete(f"{keys}/beta/{key_id}", headers=env.headers).status_code == 204
    assert env.client.get(f"{keys}/beta/{key_id}", headers=env.headers).status_code == 404


def test_a_version_signed_by_a_key_the_namespace_lacks_is_not_served() -> None:
    env = make_run_env()
    _provider(env)
    _publish(env, "1.0.0", "0123456789ABCDEF")
    refused = _registry(env, "acme/hello/1.0.0/download/linux/amd64")
    assert refused.status_code == 409 and "0123456789ABCDEF" in refused.text


def test_deletes_of_a_platform_a_version_a_provider_and_the_organization() -> None:
    env = make_run_env()
    _provider(env)
    _provider(env, name="hello", registry="public", namespace="hashicorp")
    armor, key_id = _key()
    _add_key(env, armor)
    _publish(env, "1.0.0", key_id)
    _publish(env, "1.1.0", key_id)
    assert env.api("DELETE", f"{PRIVATE}/versions/1.1.0/platforms/linux/amd64").status_code == 204
    assert env.api("DELETE", f"{PRIVATE}/versions/1.1.0/platforms/linux/amd64").status_code == 404
    assert [v["version"] for v in _registry(env, "acme/hello/versions").json()["versions"]] == ["1.0.0"]
    assert env.api("DELETE", f"{PRIVATE}/versions/1.0.0").status_code == 204
    assert env.api("GET", f"{PRIVATE}/versions/1.0.0").status_code == 404
    assert len([k for k in env.blobs.objects if k.startswith("provider-uploads/")]) == 2  # 1.1.0's two files
    public = f"{BASE}/public/hashicorp/hello"
    assert env.api("GET", f"{public}/versions").status_code == 404  # a public entry has no versions here
    assert env.api("DELETE", public).status_code == 204
    _publish(env, "2.0.0", key_id)
    assert env.api("DELETE", "/organizations/acme").status_code == 204
    assert not [k for k in env.blobs.objects if k.startswith("provider-uploads/")]
    stored = memory_items(env.container.table).values()  # the memory table's items (the reference implementation)
    left = [i for i in stored if "regprov" in f"{i['pk']} {i['sk']}" or "gpg-keys" in str(i["pk"])]
    assert left == [] and not [i for i in stored if str(i["pk"]).startswith(("prov-", "provver-"))]


def _token(env: RunEnv, username: str) -> str:
    user = env.container.accounts.create_user(username, f"{username}@example.com")
    return env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret


def test_members_read_and_install_manage_providers_publishes_strangers_see_404() -> None:
    env = make_run_env()
    _provider(env)
    armor, key_id = _key()
    _add_key(env, armor)
    _publish(env, "1.0.0", key_id)
    member = _token(env, "bob")
    join(env, member, "bob")
    as_member = {"Authorization": f"Bearer {member}", "Content-Type": "application/vnd.api+json"}
    assert _registry(env, "acme/hello/1.0.0/download/linux/amd64", as_member).status_code == 200
    listed = env.client.get(f"/api/v2{BASE}", headers=as_member).json()["data"]
    assert [(p["attributes"]["name"], p["attributes"]["permissions"]["can-delete"]) for p in listed] == [
        ("hello", False)]  # fmt: skip
    body = {"data": {"type": "registry-provider-versions", "attributes": {"version": "2.0.0", "key-id": key_id}}}
    assert env.client.post(f"/api/v2{PRIVATE}/versions", json=body, headers=as_member).status_code == 403
    other_armor, _ = _key()
    assert _add_key(env, other_armor, headers=as_member).status_code == 403
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {
        "name": "publishers", "organization-access": {"manage-providers": True}}}}).json()["data"]  # fmt: skip
    added = env.api("POST", f"/teams/{team['id']}/relationships/users", {"data": [{"type": "users", "id": "bob"}]})
    assert added.status_code == 204, added.text
    assert env.client.post(f"/api/v2{PRIVATE}/versions", json=body, headers=as_member).status_code == 201
    assert _add_key(env, other_armor, headers=as_member).status_code == 201

    stranger = {"Authorization": f"Bearer {_token(env, 'eve')}"}
    paths = ("acme/hello/versions", "acme/hello/1.0.0/download/linux/amd64")
    hidden = [_registry(env, path, stranger) for path in paths]
    hidden.append(env.client.get(f"/api/v2{PRIVATE}", headers=stranger))
    hidden.append(env.client.get(f"/api/registry/private/v2/gpg-keys/acme/{key_id}", headers=stranger))
    assert _registry(env, "acme/hello/versions", {}).status_code == 401
    assert env.api("DELETE", PRIVATE).status_code == 204
    assert env.client.delete(f"/api/registry/private/v2/gpg-keys/acme/{key_id}", headers=env.headers).status_code == 204
    absent = [_registry(env, path) for path in paths] + [env.client.get(f"/api/v2{PRIVATE}", headers=env.headers)]
    absent.append(env.client.get(f"/api/registry/private/v2/gpg-keys/acme/{key_id}", headers=env.headers))
    for seen, missing in zip(hidden, absent, strict=True):
        assert seen.status_code == missing.status_code == 404
        assert seen.json() == missing.json()


def test_the_registry_pages_list_providers_with_their_versions_and_platforms() -> None:
    from fastapi.testclient import TestClient
    from terrace.web.app import create_app
    from ui_helpers import sign_in

    env = make_run_env()
    _provider(env)
    _provider(env, name="aws", registry="public", namespace="hashicorp")
    armor, key_id = _key()
    _add_key(env, armor)
    _publish(env, "1.0.0", key_id)
    _publish(env, "1.1.0", key_id)
    browser = TestClient(create_app(env.container), base_url="https://localhost:8443", follow_redirects=False)
    assert sign_in(browser, env.headers["Authorization"].split()[1]).status_code == 303
    listed = browser.get("/app/acme/registry")
    assert listed.status_code == 200 and 'id="providers"' in listed.text
    assert "/app/acme/registry-providers/hello" in listed.text and "hashicorp/aws" in listed.text
    page = browser.get("/app/acme/registry-providers/hello")
    assert page.status_code == 200
    text = page.text.replace("&#34;", '"')
    assert 'source  = "127.0.0.1:8443/acme/hello"' in text and 'version = "1.1.0"' in text
    assert text.count("linux_amd64") == 2 and key_id in text and "signed" in text
    assert browser.get("/app/acme/registry-providers/nope").status_code == 404
