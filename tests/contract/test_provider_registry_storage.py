"""The private provider registry on each table implementation (memory, the embedded server's SQLite, DynamoDB on
moto): providers and their address claims, versions, platforms, the files' landing, GPG keys and their move to
another namespace, the protocol's answers and the deletes, through the services as the API calls them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pysequoia
import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.bootstrap import Container
from terrace.config import Settings
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.principal import Principal, PrincipalKind

ADDRESS = ("private", "acme", "hello")


@pytest.fixture(params=IMPLEMENTATIONS)
def container(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Container]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        settings = Settings(table_name="t", blob_bucket="b", url_signing_secret="s")
        yield Container(settings=settings, table=table, blobs=MemoryBlobs())


def test_providers_versions_platforms_keys_and_downloads(container: Container) -> None:
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
