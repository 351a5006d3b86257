"""Browser security headers: a strict CSP on UI pages (and templates it would not break), nosniff and a referrer
policy everywhere, HSTS over HTTPS to a real host name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from state_helpers import Env, make_env
from terrace.web.app import create_app
from terrace.web.security_headers import CONTENT_SECURITY_POLICY
from ui_helpers import sign_in

TEMPLATES = Path(create_app.__code__.co_filename).parent / "templates"


@pytest.fixture
def env() -> Env:
    return make_env()


def client(env: Env, base_url: str = "https://testserver") -> TestClient:
    return TestClient(create_app(env.container), base_url=base_url, follow_redirects=False)


def directives(policy: str) -> dict[str, list[str]]:
    parsed = [part.split() for part in policy.split(";") if part.strip()]
    return {words[0]: words[1:] for words in parsed}


def test_ui_pages_carry_a_csp_without_inline_script_and_no_framing(env: Env) -> None:
    browser = client(env)
    assert sign_in(browser, env.token).status_code == 303
    for path in ("/app/sign-in", "/app", "/app/acme/workspaces", "/app/nope/workspaces", "/app/account/tokens"):
        r = browser.get(path)
        policy = directives(r.headers["content-security-policy"])
        assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"], path
        assert policy["frame-ancestors"] == ["'none'"] and policy["default-src"] == ["'none'"]
        assert policy["base-uri"] == ["'none'"] and "'unsafe-inline'" not in r.headers["content-security-policy"]
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "same-origin"


def test_the_api_gets_nosniff_and_a_referrer_policy_but_no_csp(env: Env) -> None:
    r = client(env).get("/api/v2/organizations/acme", headers=env.auth)
    assert r.status_code == 200 and r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "same-origin" and "content-security-policy" not in r.headers
    assert r.headers["tfp-api-version"]  # the API's own headers stay
    too_large = client(env).post("/api/v2/organizations", content=b"x" * (7 << 20), headers=env.auth)
    assert too_large.status_code == 413 and too_large.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    ("base_url", "hsts"),
    [
        ("https://testserver", True),
        ("https://terrace.example.com:8443", True),
        ("http://terrace.example.com", False),
        ("https://localhost:8443", False),
        ("https://app.localhost", False),
        ("https://127.0.0.1:8443", False),
        ("https://[::1]:8443", False),
    ],
)
def test_hsts_over_https_to_a_host_name(env: Env, base_url: str, hsts: bool) -> None:
    r = client(env, base_url).get("/app/sign-in")
    assert ("strict-transport-security" in r.headers) is hsts
    if hsts:
        assert r.headers["strict-transport-security"] == "max-age=31536000"


def test_the_terraform_login_redirect_is_an_allowed_form_action() -> None:
    """Browsers check a form's redirect against form-action: the approval redirects to the CLI's listener."""
    allowed = directives(CONTENT_SECURITY_POLICY)["form-action"]
    assert {"'self'", "http://localhost:*", "http://127.0.0.1:*"} == set(allowed)


INLINE = [
    (re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I), "an inline <script>"),
    (re.compile(r"<style\b", re.I), "an inline <style>"),
    (re.compile(r"\sstyle\s*=", re.I), "a style attribute"),
    (re.compile(r"\son[a-z]+\s*=", re.I), "an inline event handler"),
    (re.compile(r"\shx-on", re.I), "an hx-on handler (evaluated code)"),
    (re.compile(r"javascript:", re.I), "a javascript: URL"),
]


@pytest.mark.parametrize("template", sorted(p.name for p in TEMPLATES.glob("*.html")))
def test_no_template_has_what_the_csp_would_block(template: str) -> None:
    text = (TEMPLATES / template).read_text()
    for pattern, what in INLINE:
        assert not pattern.search(text), f"{template} has {what}: move it to web/static"


def test_htmx_is_told_to_add_no_inline_style_and_evaluate_nothing() -> None:
    base = (TEMPLATES / "base.html").read_text()
    assert '"includeIndicatorStyles": false' in base and '"allowEval": false' in base
