"""The private registry stored on each table (memory, SQLite, DynamoDB on moto), through its stores: modules and
providers claimed once per address and freed by a deletion, records that never carry a key, versions newest first in
semantic version order, an upload landed once (a second landing of the same read loses), a platform's refusal forgotten
by its next landing, GPG keys moved between namespaces in one transaction, and `delete_all_of` taking an
organization's modules, providers, versions, platforms, keys and blobs, and nothing of another's. Then the provider
registry's services on each table, as the API calls them (`test_providers_versions_platforms_...`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pysequoia
import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.adapters.table import Table
from terrace.bootstrap import Container
from terrace.config import Settings
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.registry_modules import ModuleVersion
from terrace.domain.registry_providers import GPGKey, ProviderPlatform, ProviderVersion
from terrace.services.registry.store import ModuleStore, docs_key, module_address, version_of
from terrace.services.registry.store_providers import ProviderStore, provider_address, recorded

KEYS = {"pk", "sk", "gsi1pk", "gsi1sk"}
T0 = "2026-01-01T00:00:00Z"
ADDRESS = ("private", "acme", "hello")


@pytest.fixture(params=IMPLEMENTATIONS)
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Table]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as made:
        yield made


@pytest.fixture
def stores(table: Table) -> SimpleNamespace:
    blobs = MemoryBlobs()
    return SimpleNamespace(table=table, blobs=blobs, modules=ModuleStore(table, blobs),
                           providers=ProviderStore(table, blobs))  # fmt: skip


def _module(module_id: str, name: str, org: str = "acme") -> dict[str, Any]:
    address = module_address("private", org, name, "aws")
    return {"id": module_id, "organization": org, "organization_id": f"org-{org}", "registry_name": "private",
            "namespace": "", "name": name, "provider": "aws", "address": address, "created_at": T0,
            "updated_at": T0, "version": 1}  # fmt: skip


def _module_version(module_id: str, version: str) -> ModuleVersion:
    version_id = f"modver-{module_id}-{version}"
    return ModuleVersion(id=version_id, module_id=module_id, version=version, status="pending", created_at=T0,
                         updated_at=T0, blob_key=f"module-uploads/{module_id}/{version_id}.tar.gz")  # fmt: skip


def test_modules_claim_their_address_once_and_free_it_with_their_versions(stores: SimpleNamespace) -> None:
    store: ModuleStore = stores.modules
    assert store.create(_module("mod-b", "beta")) and store.create(_module("mod-a", "alpha"))
    assert not store.create(_module("mod-c", "Alpha"))  # the address is claimed case-insensitively
    assert store.module("mod-c") is None and store.create(_module("mod-o", "alpha", org="other"))
    assert [m["id"] for m in store.modules_of("acme")] == ["mod-a", "mod-b"]  # by address
    claimed = store.claimed("acme", module_address("private", "acme", "ALPHA", "aws"))
    assert claimed == store.module("mod-a") and claimed is not None and not KEYS & set(claimed)
    assert store.claimed("acme", module_address("private", "acme", "nothere", "aws")) is None
    for version in ("1.0.0", "1.10.0", "1.2.0", "2.0.0-rc.1"):
        assert store.create_version(_module_version("mod-a", version))
    assert not store.create_version(_module_version("mod-a", "1.0.0"))
    assert [v.version for v in store.versions_of("mod-a")] == ["2.0.0-rc.1", "1.10.0", "1.2.0", "1.0.0"]
    assert (
        store.version("mod-a", "1.2.0") == _module_version("mod-a", "1.2.0") and store.version("mod-a", "9.9.9") is None
    )
    store.delete("mod-a")
    assert store.module("mod-a") is None and store.versions_of("mod-a") == []
    assert store.create(_module("mod-d", "alpha"))  # its claim went with it


def test_an_upload_lands_once_and_a_version_goes_with_its_blobs(stores: SimpleNamespace) -> None:
    store: ModuleStore = stores.modules
    created = _module_version("mod-a", "1.0.0")
    store.create_version(created)
    item = store.uploaded_to("mod-a", created.blob_key)
    assert item is not None and version_of(item) == created and store.uploaded_to("mod-a", "other") is None
    landed = store.land(item, {"status": "ok", "size": 7, "md5": "m", "updated_at": "t"})
    assert landed is not None and (landed.status, landed.size, landed.md5) == ("ok", 7, "m")
    assert store.land(item, {"status": "reg_ingress_failed", "error": "no"}) is None  # decided already
    assert store.version("mod-a", "1.0.0") == landed
    stores.blobs.put(created.blob_key, b"tarball")
    stores.blobs.put(docs_key(created), b"{}")
    store.delete_version(landed)
    assert store.version("mod-a", "1.0.0") is None and not stores.blobs.objects


def _provider(provider_id: str, name: str, org: str = "acme") -> dict[str, Any]:
    return {"id": provider_id, "organization": org, "organization_id": f"org-{org}", "registry_name": "private",
            "namespace": "", "name": name, "address": provider_address("private", org, name), "created_at": T0,
            "updated_at": T0, "version": 1}  # fmt: skip


def _provider_version(provider_id: str, version: str) -> ProviderVersion:
    prefix = f"provider-uploads/{provider_id}/provver-{version}/"
    return ProviderVersion(id=f"provver-{version}", provider_id=provider_id, version=version, key_id="K",
                           protocols=("5.0",), created_at=T0, updated_at=T0, shasums_key=prefix + "SHA256SUMS",
                           signature_key=prefix + "SHA256SUMS.sig")  # fmt: skip


def _platform(version_id: str, os_name: str) -> ProviderPlatform:
    return ProviderPlatform(id=f"provpltfrm-{os_name}", version_id=version_id, os=os_name, arch="amd64",
                            filename="p.zip", shasum="abc", blob_key=f"provider-uploads/p/{version_id}/{os_name}.zip",
                            created_at=T0)  # fmt: skip


def test_providers_versions_and_platforms(stores: SimpleNamespace) -> None:
    store: ProviderStore = stores.providers
    assert store.create(_provider("prov-a", "hello")) and not store.create(_provider("prov-b", "HELLO"))
    assert store.claimed("acme", provider_address("private", "acme", "hello")) == store.provider("prov-a")
    assert [p["id"] for p in store.providers_of("acme")] == ["prov-a"] and not KEYS & set(store.providers_of("acme")[0])
    for version in ("1.0.0", "1.10.0", "1.9.0"):
        assert store.create_version(_provider_version("prov-a", version))
    assert not store.create_version(_provider_version("prov-a", "1.0.0"))
    assert [v.version for v in store.versions_of("prov-a")] == ["1.10.0", "1.9.0", "1.0.0"]
    item = store.version_item("prov-a", "provver-1.0.0")
    assert (
        item is not None
        and recorded(item, "shasums") is None
        and store.recorded_files("prov-a", "1.0.0") == (None, None)
    )
    landed = store.land_version(item, {"shasums": {"size": 1, "md5": "m"}})
    assert landed is not None and landed.shasums_uploaded and not landed.signature_uploaded
    assert store.land_version(item, {"signature": {"size": 1, "md5": "s"}}) is None  # from a stale read
    assert store.recorded_files("prov-a", "1.0.0") == ({"size": 1, "md5": "m"}, None)
    assert store.create_platform(_platform("provver-1.0.0", "linux"))
    assert not store.create_platform(_platform("provver-1.0.0", "linux"))
    assert store.platform("provver-1.0.0", "linux", "amd64") == _platform("provver-1.0.0", "linux")
    zip_key = _platform("provver-1.0.0", "linux").blob_key
    first = store.platform_item("provver-1.0.0", zip_key)
    assert first is not None
    refused = store.land_platform(first, {"error": "too large"})
    assert refused is not None and refused.error == "too large" and not refused.uploaded
    again = store.platform_item("provver-1.0.0", zip_key)
    accepted = store.land_platform(again or {}, {"binary": {"size": 3, "md5": "z"}})
    assert accepted is not None and accepted.uploaded and accepted.error is None  # the refusal is forgotten
    assert store.recorded_binary(accepted) == (3, "z") and store.land_platform(first, {"binary": {}}) is None
    for blob_key in (zip_key, landed.shasums_key, landed.signature_key):
        stores.blobs.put(blob_key, b"x")
    store.delete_version(landed)  # its platforms, their zips and its files go with it
    assert store.platforms_of("provver-1.0.0") == [] and not stores.blobs.objects
    store.delete("prov-a")
    assert store.provider("prov-a") is None and store.versions_of("prov-a") == []
    assert store.create(_provider("prov-c", "hello"))


def _key(key_id: str, org: str = "acme") -> GPGKey:
    return GPGKey(id=f"gpgkey-{key_id}", organization=org, namespace=org, key_id=key_id, ascii_armor="armor",
                  created_at=T0, updated_at=T0)  # fmt: skip


def test_gpg_keys_are_kept_per_namespace_and_moved_in_one_transaction(stores: SimpleNamespace) -> None:
    store: ProviderStore = stores.providers
    assert store.create_key(_key("AAAA")) and store.create_key(_key("BBBB"))
    assert not store.create_key(_key("AAAA")) and store.create_key(_key("AAAA", org="beta"))
    assert [k.key_id for k in store.keys_of("acme", "acme")] == ["AAAA", "BBBB"]
    with pytest.raises(Conflict, match="already in beta"):
        store.move_key("AAAA", "acme", ("beta", "beta"), "t")
    assert store.key("acme", "AAAA", "acme") == _key("AAAA")  # nothing moved
    moved = store.move_key("BBBB", "acme", ("beta", "beta"), "t")
    assert moved == GPGKey(id="gpgkey-BBBB", organization="beta", namespace="beta", key_id="BBBB",
                           ascii_armor="armor", created_at=T0, updated_at="t")  # fmt: skip
    assert store.key("acme", "BBBB", "acme") is None and store.key("beta", "BBBB", "beta") == moved
    assert store.move_key("BBBB", "acme", ("beta", "beta"), "t") is None  # no longer in the source
    store.delete_key("acme", "AAAA")
    assert store.keys_of("acme", "acme") == []


def test_delete_all_of_an_organization_takes_its_registry_and_blobs_only(stores: SimpleNamespace) -> None:
    modules: ModuleStore = stores.modules
    providers: ProviderStore = stores.providers
    for org in ("acme", "other"):
        modules.create(_module(f"mod-{org}", "m", org=org))
        module_version = _module_version(f"mod-{org}", "1.0.0")
        modules.create_version(module_version)
        providers.create(_provider(f"prov-{org}", "p", org=org))
        version = replace(_provider_version(f"prov-{org}", "1.0.0"), id=f"provver-{org}")
        providers.create_version(version)
        platform = _platform(version.id, "linux")
        providers.create_platform(platform)
        providers.create_key(_key("AAAA", org=org))
        for blob_key in (module_version.blob_key, docs_key(module_version), version.shasums_key, platform.blob_key):
            stores.blobs.put(blob_key, org.encode())
    modules.delete_all_of(organization="acme")
    providers.delete_all_of(organization="acme")
    assert modules.modules_of("acme") == [] and modules.module("mod-acme") is None
    assert modules.versions_of("mod-acme") == [] and providers.providers_of("acme") == []
    assert providers.versions_of("prov-acme") == [] and providers.keys_of("acme", "acme") == []
    assert modules.create(_module("mod-again", "m")) and providers.create(_provider("prov-again", "p"))
    assert set(stores.blobs.objects.values()) == {b"other"}
    assert modules.versions_of("mod-other") and providers.versions_of("prov-other")
    assert providers.keys_of("other", "other") and providers.platforms_of("provver-other")
    assert providers.platforms_of("provver-acme") == []


# the services on each table ------------------------------------------------------------------------------------
@pytest.fixture
def container(table: Table) -> Container:
    settings = Settings(table_name="t", blob_bucket="b", url_signing_secret="s")
    return Container(settings=settings, table=table, blobs=MemoryBlobs())


def test_providers_versions_platforms_keys_and_downloads_through_the_services(container: Container) -> None:
    user = container.accounts.create_user("alice", "alice@example.com")
    me = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(me, "acme", "ops@example.com")
    container.organizations.create(me, "beta", "ops@example.com")
    attrs = {"name": "hello", "namespace": "acme", "registry-name": "private"}
    provider = container.registry_providers.create(me, "acme", attrs)
    with pytest.raises(Conflict):
        container.registry_providers.create(me, "acme", attrs)  # the address claim holds on every table
    public = {"name": "hello", "namespace": "hashicorp", "registry-name": "public"}
    container.registry_providers.create(me, "acme", public)
    assert sorted(p.registry_name for p in container.registry_providers.list(me, "acme")) == ["private", "public"]

    cert = pysequoia.Tsk.generate("P <p@example.com>").extract_certificate()
    key = container.gpg_keys.create(me, "private", {"namespace": "acme", "ascii-armor": str(cert)})
    assert key.key_id == cert.fingerprint.upper()[-16:]
    _, version = container.provider_versions.create(me, "acme", ADDRESS, {"version": "1.0.0", "key-id": key.key_id,
                                                                           "protocols": ["5.0"]})  # fmt: skip
    zip_data = b"a provider zip"
    shasum = hashlib.sha256(zip_data).hexdigest()
    platform_attrs = {"os": "linux", "arch": "amd64", "shasum": shasum, "filename": "hello.zip"}
    _, platform = container.provider_platforms.create(me, "acme", ADDRESS, "1.0.0", platform_attrs)
    with pytest.raises(Conflict):
        container.provider_platforms.create(me, "acme", ADDRESS, "1.0.0", platform_attrs)
    assert container.provider_downloads.available(me, "acme", "hello") == []  # nothing landed yet
    for blob_key, data in ((version.shasums_key, f"{shasum}  hello.zip\n".encode()),
                           (version.signature_key, b"sig"), (platform.blob_key, zip_data)):  # fmt: skip
        container.blobs.put(blob_key, data)
        container.provider_file_landed(blob_key)
    [listed] = container.provider_downloads.available(me, "acme", "hello")
    assert listed == {"version": "1.0.0", "protocols": ["5.0"], "platforms": [{"os": "linux", "arch": "amd64"}]}
    download = container.provider_downloads.download(me, "acme", "hello", "1.0.0", ("linux", "amd64"))
    assert download["shasum"] == shasum and download["signing_keys"]["gpg_public_keys"][0]["key_id"] == key.key_id

    moved = container.gpg_keys.update(me, "private", "acme", key.key_id, {"namespace": "beta"})
    assert moved.namespace == "beta" and [k.key_id for k in container.gpg_keys.list(me, "private", ["beta"])] == [
        key.key_id]  # fmt: skip
    with pytest.raises(NotFound):
        container.gpg_keys.read(me, "private", "acme", key.key_id)

    container.provider_versions.delete(me, "acme", ADDRESS, "1.0.0")
    assert not container.blobs.objects and container.provider_platforms.of_version(version.id) == []
    container.registry_providers.delete(me, "acme", ADDRESS)
    with pytest.raises(NotFound):
        container.registry_providers.get(me, "acme", ADDRESS)
    assert [p.registry_name for p in container.registry_providers.list(me, "acme")] == ["public"]
    assert container.registry_providers.create(me, "acme", attrs).id != provider.id  # its claim went with it
