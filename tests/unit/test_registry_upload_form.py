"""Publishing a module version from the registry's module page: a multipart form (version and `.tar.gz`) that
only a publisher sees, checked for its CSRF token, read as an API upload is (ok, or failed with the reason), and
refused with the reason beside the form for a bad version, a duplicate or a missing archive."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from run_helpers import RunEnv, join, make_run_env, tarball
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app
from ui_helpers import sign_in

MAIN_TF = 'variable "name" {\n  type = string\n}\noutput "hello" {\n  value = "hi ${var.name}"\n}\n'
PAGE = "/app/acme/registry/vpc/aws"


def _browser(env: RunEnv, token: str) -> tuple[TestClient, str]:
    browser = TestClient(create_app(env.container), base_url="https://localhost:8443", follow_redirects=False)
    assert sign_in(browser, token).status_code == 303
    page = browser.get(PAGE)
    assert page.status_code == 200, page.text
    csrf = page.text.split('name="csrf_token" value="')[1].split('"')[0] if 'id="publish"' in page.text else ""
    return browser, csrf


def _upload(browser: TestClient, csrf: str, version: str, data: bytes | None) -> Any:
    files = {"tarball": ("vpc.tar.gz", data, "application/gzip")} if data is not None else {"tarball": ("", b"")}
    return browser.post(f"{PAGE}/versions", data={"csrf_token": csrf, "version": version}, files=files)


def test_a_publisher_uploads_a_version_from_the_module_page() -> None:
    env = make_run_env()
    body = {"data": {"type": "registry-modules", "attributes": {"name": "vpc", "provider": "aws"}}}
    assert env.api("POST", "/organizations/acme/registry-modules", body).status_code == 201
    browser, csrf = _browser(env, env.headers["Authorization"].split()[1])
    assert csrf, "an owner sees the publish form"
    done = _upload(browser, csrf, "1.0.0", tarball({"main.tf": MAIN_TF, "README.md": "# VPC\n"}))
    assert done.status_code == 303 and done.headers["location"] == f"{PAGE}?version=1.0.0"
    shown = browser.get(done.headers["location"]).text
    assert 'id="shown-version">1.0.0<' in shown and "ok" in shown and 'id="usage"' in shown
    versions = env.client.get("/api/registry/v1/modules/acme/vpc/aws/versions", headers=env.headers).json()
    assert versions["modules"][0]["versions"] == [{"version": "1.0.0"}]  # terraform can install it now

    failed = _upload(browser, csrf, "1.1.0", tarball({"README.md": "no module"}))
    assert failed.status_code == 303
    assert "no .tf or .tf.json file" in browser.get(failed.headers["location"]).text
    duplicate = _upload(browser, csrf, "1.0.0", tarball({"main.tf": MAIN_TF}))
    assert duplicate.status_code == 409 and 'role="alert"' in duplicate.text and "already exists" in duplicate.text
    bad = _upload(browser, csrf, "one", tarball({"main.tf": MAIN_TF}))
    assert bad.status_code == 422 and "semantic version" in bad.text and 'value="one"' in bad.text
    assert _upload(browser, csrf, "2.0.0", None).status_code == 422
    forged = _upload(browser, "not-the-token", "3.0.0", tarball({"main.tf": MAIN_TF}))
    assert forged.status_code in (400, 403)
    headers = {"Content-Type": "multipart/form-data; boundary=zz"}
    garbled = browser.post(f"{PAGE}/versions", content=b"--zz\r\nno headers end", headers=headers)
    assert 400 <= garbled.status_code < 500
    unbounded = browser.post(f"{PAGE}/versions", content=b"x", headers={"Content-Type": "multipart/form-data"})
    assert 400 <= unbounded.status_code < 500
    listed = env.api("GET", "/organizations/acme/registry-modules").json()["data"][0]["attributes"]
    assert sorted(v["version"] for v in listed["version-statuses"]) == ["1.0.0", "1.1.0"]


def test_members_without_manage_modules_see_no_form_and_cannot_post() -> None:
    env = make_run_env()
    body = {"data": {"type": "registry-modules", "attributes": {"name": "vpc", "provider": "aws"}}}
    env.api("POST", "/organizations/acme/registry-modules", body)
    user = env.container.accounts.create_user("bob", "bob@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    join(env, token, "bob")
    browser, csrf = _browser(env, token)
    assert csrf == ""  # no form
    page = browser.get(PAGE)
    token_field = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    refused = _upload(browser, token_field, "1.0.0", tarball({"main.tf": MAIN_TF}))
    assert refused.status_code == 404  # the UI shows 403 as 404
    module = env.api("GET", "/organizations/acme/registry-modules").json()["data"][0]
    assert module["attributes"]["version-statuses"] == []
