"""The private module registry through the API go-tfe calls (create, read, list, versions with their upload,
deletes), the tarball's landing (ok, or failed with the reason), the module registry protocol terraform calls
(versions, a 204 download with `X-Terraform-Get`), and who may do what (members read, `manage-modules`
publishes, other organizations see 404)."""

from __future__ import annotations

import io
import tarfile
from typing import Any

from run_helpers import RunEnv, join, make_run_env, tarball
from table_items import memory_items
from terrace.domain.principal import PrincipalKind

MODULE_TF = """
variable "name" {
  type        = string
  description = "What to call it"
}
variable "size" {
  type    = number
  default = 3
}
resource "null_resource" "this" {}
output "id" {
  value       = null_resource.this.id
  description = "The resource's id"
}
"""


def _module(env: RunEnv, name: str = "vpc", provider: str = "aws", **extra: Any) -> Any:
    body = {"data": {"type": "registry-modules", "attributes": {"name": name, "provider": provider, **extra}}}
    return env.api("POST", "/organizations/acme/registry-modules", body)


def _version(env: RunEnv, version: str, name: str = "vpc", provider: str = "aws") -> Any:
    body = {"data": {"type": "registry-module-versions", "attributes": {"version": version}}}
    return env.api("POST", f"/registry-modules/acme/{name}/{provider}/versions", body)


def _publish(env: RunEnv, version: str, data: bytes) -> dict[str, Any]:
    created = _version(env, version)
    assert created.status_code == 201, created.text
    doc = created.json()["data"]
    key = doc["links"]["upload"].split("memory://blobs/")[1].split("?")[0]
    env.land(key, data)
    read = env.api("GET", f"/organizations/acme/registry-modules/private/acme/vpc/aws/version?module_version={version}")
    assert read.status_code == 200, read.text
    return dict(read.json()["data"])


def _registry(env: RunEnv, path: str, headers: dict[str, str] | None = None) -> Any:
    return env.client.get(f"/api/registry/v1/modules/{path}", headers=env.headers if headers is None else headers)


def test_discovery_advertises_the_module_registry() -> None:
    env = make_run_env()
    assert env.client.get("/.well-known/terraform.json").json()["modules.v1"] == "/api/registry/v1/modules/"


def test_publish_a_version_and_download_it_through_the_protocol() -> None:
    env = make_run_env()
    created = _module(env)
    assert created.status_code == 201, created.text
    module = created.json()["data"]
    assert module["type"] == "registry-modules" and module["id"].startswith("mod-")
    attrs = module["attributes"]
    assert (attrs["name"], attrs["provider"], attrs["namespace"], attrs["registry-name"]) == (
        "vpc",
        "aws",
        "acme",
        "private",
    )
    assert attrs["status"] == "pending" and module["relationships"]["organization"]["data"]["id"] == "acme"
    assert _module(env).status_code == 409  # one module per address

    pending = _version(env, "1.0.0").json()["data"]
    assert pending["attributes"]["status"] == "pending" and pending["links"]["upload"]
    ok = _publish(env, "1.2.0", tarball({"main.tf": MODULE_TF, "README.md": "# VPC\n"}))
    assert ok["attributes"]["status"] == "ok" and "upload" not in (ok.get("links") or {})
    read = env.api("GET", "/organizations/acme/registry-modules/private/acme/vpc/aws").json()["data"]["attributes"]
    assert read["status"] == "setup_complete"
    assert {(s["version"], s["status"]) for s in read["version-statuses"]} == {("1.2.0", "ok"), ("1.0.0", "pending")}
    assert env.api("GET", f"/registry-modules/{module['id']}").json()["data"]["id"] == module["id"]

    versions = _registry(env, "acme/vpc/aws/versions")
    assert versions.status_code == 200
    assert versions.json()["modules"][0]["versions"] == [{"version": "1.2.0"}]  # pending ones are not offered
    download = _registry(env, "acme/vpc/aws/1.2.0/download")
    assert download.status_code == 204
    url = download.headers["X-Terraform-Get"]
    assert url.startswith("memory://blobs/module-uploads/")
    assert _registry(env, "acme/vpc/aws/1.0.0/download").status_code == 409  # not uploaded yet
    assert _registry(env, "acme/vpc/aws/9.9.9/download").status_code == 404

    docs = env.container.module_versions.docs(env.container.module_versions.of_module(module["id"])[0])
    assert docs["readme"] == "# VPC\n"
    assert [(i["name"], i["required"], i["default"]) for i in docs["inputs"]] == [
        ("name", True, None),
        ("size", False, "3"),
    ]
    assert docs["outputs"] == [{"name": "id", "description": "The resource's id", "sensitive": False}]
    assert docs["resources"] == [{"type": "null_resource", "name": "this"}]


def _raw_tar(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, linkname
        data = b'output "x" { value = 1 }' if kind == tarfile.REGTYPE else b""
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_a_tarball_that_is_not_a_module_fails_with_the_reason() -> None:
    env = make_run_env()
    _module(env)
    for version, data, reason in (
        ("0.1.0", b"not a tarball", "not a readable .tar.gz"),
        ("0.2.0", tarball({"README.md": "no code"}), "no .tf or .tf.json file"),
        ("0.3.0", _raw_tar("../escape.tf"), "refused"),
        ("0.4.0", _raw_tar("main.tf", tarfile.SYMTYPE, "/etc/passwd"), "refused"),
    ):
        failed = _publish(env, version, data)["attributes"]
        assert failed["status"] == "reg_ingress_failed", (version, failed)
        assert reason in failed["error"], (version, failed["error"])
    assert _registry(env, "acme/vpc/aws/versions").json()["modules"][0]["versions"] == []


def test_input_errors_are_422_and_duplicates_409() -> None:
    env = make_run_env()
    for attrs in ({"provider": "aws"}, {"name": "vpc"}, {"name": "v pc", "provider": "aws"},
                  {"name": "vpc", "provider": "AWS"}, {"name": "vpc", "provider": "aws", "registry-name": "x"},
                  {"name": "vpc", "provider": "aws", "registry-name": "public"}):  # fmt: skip
        body = {"data": {"type": "registry-modules", "attributes": attrs}}
        refused = env.api("POST", "/organizations/acme/registry-modules", body)
        assert refused.status_code == 422, (attrs, refused.text)
        assert refused.json()["errors"][0]["detail"]
    assert env.api("GET", "/organizations/acme/registry-modules").json()["data"] == []
    _module(env)
    for version in ("1", "1.0", "v1.0.0", "1.0.0.0", ""):
        assert _version(env, version).status_code == 422, version
    assert _version(env, "1.0.0").status_code == 201
    assert _version(env, "1.0.0").status_code == 409
    assert _version(env, "1.0.0", name="nope").status_code == 404


def test_deletes_of_a_version_a_provider_and_a_module() -> None:
    env = make_run_env()
    _module(env)
    _module(env, provider="google")
    _publish(env, "1.0.0", tarball({"main.tf": MODULE_TF}))
    _publish(env, "1.1.0", tarball({"main.tf": MODULE_TF}))
    base = "/organizations/acme/registry-modules/private/acme/vpc"
    assert env.api("DELETE", f"{base}/aws/1.0.0").status_code == 204
    assert [v["version"] for v in _registry(env, "acme/vpc/aws/versions").json()["modules"][0]["versions"]] == ["1.1.0"]
    assert env.api("DELETE", f"{base}/aws/1.0.0").status_code == 404
    assert env.api("DELETE", f"{base}/aws").status_code == 204
    assert env.api("GET", f"{base}/aws").status_code == 404
    assert not [k for k in env.blobs.objects if k.startswith("module-")]  # tarballs and docs went with them
    assert env.api("GET", f"{base}/google").status_code == 200
    assert env.api("DELETE", base).status_code == 204
    assert env.api("GET", "/organizations/acme/registry-modules").json()["data"] == []
    assert env.api("DELETE", base).status_code == 404


def _token(env: RunEnv, username: str) -> str:
    user = env.container.accounts.create_user(username, f"{username}@example.com")
    return env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret


def test_members_read_and_install_manage_modules_publishes_strangers_see_404() -> None:
    env = make_run_env()
    _module(env)
    _publish(env, "1.0.0", tarball({"main.tf": MODULE_TF}))
    member = _token(env, "bob")
    join(env, member, "bob")
    as_member = {"Authorization": f"Bearer {member}", "Content-Type": "application/vnd.api+json"}
    assert _registry(env, "acme/vpc/aws/1.0.0/download", as_member).status_code == 204
    listed = env.client.get("/api/v2/organizations/acme/registry-modules", headers=as_member)
    assert [m["attributes"]["name"] for m in listed.json()["data"]] == ["vpc"]
    body = {"data": {"type": "registry-module-versions", "attributes": {"version": "2.0.0"}}}
    refused = env.client.post("/api/v2/registry-modules/acme/vpc/aws/versions", json=body, headers=as_member)
    assert refused.status_code == 403
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {
        "name": "publishers", "organization-access": {"manage-modules": True}}}}).json()["data"]  # fmt: skip
    added = env.api("POST", f"/teams/{team['id']}/relationships/users", {"data": [{"type": "users", "id": "bob"}]})
    assert added.status_code == 204, added.text
    published = env.client.post("/api/v2/registry-modules/acme/vpc/aws/versions", json=body, headers=as_member)
    assert published.status_code == 201, published.text

    stranger = {"Authorization": f"Bearer {_token(env, 'eve')}"}
    paths = ("acme/vpc/aws/versions", "acme/vpc/aws/1.0.0/download")
    hidden = [_registry(env, path, stranger) for path in paths]
    api = "/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws"
    hidden.append(env.client.get(api, headers=stranger))
    assert _registry(env, "acme/vpc/aws/versions", {}).status_code == 401
    assert env.api("DELETE", "/organizations/acme/registry-modules/private/acme/vpc/aws").status_code == 204
    absent = [_registry(env, path) for path in paths] + [env.client.get(api, headers=env.headers)]
    for seen, missing in zip(hidden, absent, strict=True):
        assert seen.status_code == missing.status_code == 404
        assert seen.json() == missing.json()


def test_public_entries_point_at_a_public_module_and_the_older_delete_paths() -> None:
    env = make_run_env()
    public = _module(env, **{"registry-name": "public", "namespace": "terraform-aws-modules"})
    assert public.status_code == 201, public.text
    attrs = public.json()["data"]["attributes"]
    assert (attrs["registry-name"], attrs["namespace"]) == ("public", "terraform-aws-modules")
    assert attrs["permissions"] == {"can-delete": True, "can-resync": True, "can-retry": True}
    path = "/organizations/acme/registry-modules/public/terraform-aws-modules/vpc/aws"
    assert env.api("GET", path).status_code == 200
    assert _version(env, "1.0.0").status_code == 404  # no private module vpc/aws: versions are private ones'
    _module(env)
    _publish(env, "1.0.0", tarball({"main.tf": MODULE_TF}))
    assert env.api("POST", "/registry-modules/actions/delete/acme/vpc/aws/1.0.0").status_code == 204
    assert _registry(env, "acme/vpc/aws/versions").json()["modules"][0]["versions"] == []
    assert env.api("POST", "/registry-modules/actions/delete/acme/vpc").status_code == 204  # both registries
    assert env.api("GET", "/organizations/acme/registry-modules").json()["data"] == []


def test_the_registry_pages_show_versions_readme_inputs_outputs_and_usage() -> None:
    from fastapi.testclient import TestClient
    from terrace.web.app import create_app
    from ui_helpers import sign_in

    env = make_run_env()
    _module(env)
    _publish(env, "1.0.0", tarball({"main.tf": MODULE_TF, "README.md": "# VPC <script>x</script>\n"}))
    _publish(env, "1.1.0", tarball({"README.md": "not a module"}))
    browser = TestClient(create_app(env.container), base_url="https://localhost:8443", follow_redirects=False)
    assert sign_in(browser, env.headers["Authorization"].split()[1]).status_code == 303
    listed = browser.get("/app/acme/registry")
    assert listed.status_code == 200 and "/app/acme/registry/vpc/aws" in listed.text and "1.0.0" in listed.text
    page = browser.get("/app/acme/registry/vpc/aws")
    assert page.status_code == 200
    assert 'id="shown-version">1.0.0<' in page.text  # the newest version that is ok
    assert 'source  = "127.0.0.1:8443/acme/vpc/aws"' in page.text.replace("&#34;", '"')
    assert "What to call it" in page.text and "The resource&#39;s id" in page.text and "null_resource.this" in page.text
    assert "&lt;script&gt;" in page.text and "<script>x" not in page.text  # the README is text, escaped
    failed = browser.get("/app/acme/registry/vpc/aws?version=1.1.0")
    assert "no .tf or .tf.json file" in failed.text and 'id="usage"' not in failed.text
    assert browser.get("/app/acme/registry/nope/aws").status_code == 404


def test_deleting_the_organization_deletes_its_modules_versions_and_archives() -> None:
    env = make_run_env()
    _module(env)
    _publish(env, "1.0.0", tarball({"main.tf": MODULE_TF}))
    assert [k for k in env.blobs.objects if k.startswith("module-")]
    assert env.api("DELETE", "/organizations/acme").status_code == 204
    assert not [k for k in env.blobs.objects if k.startswith("module-")]
    stored = memory_items(env.container.table).values()  # the memory table's items (the reference implementation)
    assert [i for i in stored if "regmod" in f"{i['pk']} {i['sk']}" or str(i["pk"]).startswith("mod-")] == []
    # a new organization of the same name starts without them
    body = {"data": {"type": "organizations", "attributes": {"name": "acme", "email": "a@example.com"}}}
    assert env.api("POST", "/organizations", body).status_code == 201
    assert env.api("GET", "/organizations/acme/registry-modules").json()["data"] == []
    assert _module(env).status_code == 201


def test_a_version_is_deprecated_listed_with_its_reason_and_undeprecated() -> None:
    """HCP Terraform's manage module versions API (`PATCH .../private/:org/:name/:provider/:version` with
    `deprecation`); the registry protocol lists a deprecated version with its `deprecation`."""
    env = make_run_env()
    _module(env)
    _publish(env, "1.0.0", tarball({"main.tf": MODULE_TF}))
    path = "/organizations/acme/registry-modules/private/acme/vpc/aws/1.0.0"
    body = {"data": {"type": "module-versions", "attributes": {"deprecation": {
        "deprecated-status": "Deprecated", "reason": "use 2.x", "link": "https://example.com/why"}}}}  # fmt: skip
    answer = env.api("PATCH", path, body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["included"][0]["attributes"] == {"reason": "use 2.x", "link": "https://example.com/why"}
    listed = _registry(env, "acme/vpc/aws/versions").json()["modules"][0]["versions"]
    assert listed == [{"version": "1.0.0", "deprecation": {"reason": "use 2.x", "link": "https://example.com/why"}}]
    assert _registry(env, "acme/vpc/aws/1.0.0/download").status_code == 204  # still installable
    undo = {"data": {"type": "module-versions", "attributes": {"deprecation": {"deprecated-status": "Undeprecated"}}}}
    assert env.api("PATCH", path, undo).json()["data"]["relationships"]["deprecation"]["data"] is None
    assert _registry(env, "acme/vpc/aws/versions").json()["modules"][0]["versions"] == [{"version": "1.0.0"}]
    for bad in ({"deprecated-status": "Gone"}, {"deprecated-status": "Deprecated", "link": "ftp://x"}, "yes"):
        bad_body = {"data": {"type": "module-versions", "attributes": {"deprecation": bad}}}
        assert env.api("PATCH", path, bad_body).status_code == 422, bad
    assert env.api("PATCH", path.replace("1.0.0", "9.9.9"), body).status_code == 404
    bob = env.container.accounts.create_user("bob", "b@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, bob.id).secret
    join(env, token, "bob")  # a member: reads modules, may not manage them
    as_bob = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    assert env.client.patch(f"/api/v2{path}", json=body, headers=as_bob).status_code == 403
