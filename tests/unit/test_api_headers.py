"""The headers every TFC client reads (TFP-API-Version, X-TFE-Version, X-RateLimit-Limit), rate limiting per
token with go-tfe's 429 contract, and service discovery advertising only what exists."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from state_helpers import Env, make_env, other_user
from terrace.config import Settings
from terrace.web import rate_limit
from terrace.web.app import create_app


def test_discovery_advertises_only_services_that_exist(state_env: Env) -> None:
    services = state_env.client.get("/.well-known/terraform.json").json()
    assert services.pop("modules.v1") == "/api/registry/v1/modules/"  # the private module registry
    assert services.pop("providers.v1") == "/api/registry/v1/providers/"  # the private provider registry
    assert services.pop("login.v1")["token"] == "/oauth/token"  # terraform login (tests/unit/test_terraform_login.py)
    for name, url in services.items():
        assert url == "/api/v2/", name
    ping = state_env.client.get("/api/v2/ping", headers=state_env.auth)
    assert ping.status_code == 204


def test_api_responses_carry_the_headers_clients_read(state_env: Env) -> None:
    r = state_env.client.get(f"/api/v2/workspaces/{state_env.ws_id}", headers=state_env.auth)
    major, minor = (int(p) for p in r.headers["TFP-API-Version"].split(".")[:2])
    assert (major, minor) >= (2, 5)
    # terraform's cloud backend parses the YYYYMM of `vYYYYMM-N` as an integer
    assert re.fullmatch(r"v\d{6}-\d+", r.headers["X-TFE-Version"])
    assert r.headers["X-Terrace-Version"]


@pytest.fixture
def limited(monkeypatch: pytest.MonkeyPatch) -> tuple[Env, list[float]]:
    now = [1000.0]
    monkeypatch.setattr(rate_limit, "monotonic_now", lambda: now[0])
    settings = Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s", api_rate_limit_per_s=3)
    return make_env(settings), now


def test_each_token_is_limited_to_its_rate_with_a_429_go_tfe_can_retry(limited: tuple[Env, list[float]]) -> None:
    env, now = limited
    url = f"/api/v2/workspaces/{env.ws_id}"
    for _ in range(3):  # the burst: as many as the limit
        ok = env.client.get(url, headers=env.auth)
        assert ok.status_code == 200 and ok.headers["X-RateLimit-Limit"] == "3"
    refused = env.client.get(url, headers=env.auth)
    assert refused.status_code == 429
    assert refused.headers["content-type"].startswith("application/vnd.api+json")
    assert refused.json()["errors"][0]["status"] == "429"
    reset = float(refused.headers["X-RateLimit-Reset"])  # go-tfe: strconv.ParseFloat, seconds to wait
    assert 1 / 3 <= reset <= 0.334
    assert refused.headers["X-RateLimit-Limit"] == "3" and refused.headers["TFP-API-Version"]
    # another token has its own bucket; the UI and the http backend are not counted here
    other_token, _ = other_user(env)
    assert env.client.get("/api/v2/account/details", headers={"Authorization": f"Bearer {other_token}"}).is_success
    for _ in range(5):  # signed log-read URLs are not counted (they carry no token)
        assert env.client.get("/api/v2/logs/plan-x/1/sig").status_code == 404
    now[0] += reset
    assert env.client.get(url, headers=env.auth).status_code == 200
    assert env.client.get(url, headers=env.auth).status_code == 429


def test_no_limit_when_set_to_zero() -> None:
    settings = Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s", api_rate_limit_per_s=0)
    env = make_env(settings)
    client = TestClient(create_app(env.container))
    for _ in range(10):
        r = client.get(f"/api/v2/workspaces/{env.ws_id}", headers=env.auth)
        assert r.status_code == 200 and "X-RateLimit-Limit" not in r.headers


def test_servers_limit_at_tfc_s_rate_unless_configured() -> None:
    base = {"TERRACE_TABLE": "t", "TERRACE_BLOB_BUCKET": "b"}
    assert Settings.from_env(base).api_rate_limit_per_s == 30
    assert Settings.from_env({**base, "TERRACE_API_RATE_LIMIT_PER_S": "0"}).api_rate_limit_per_s == 0


def test_spaces_around_a_token_do_not_make_a_fresh_bucket(limited: tuple[Env, list[float]]) -> None:
    env, _ = limited
    url = f"/api/v2/workspaces/{env.ws_id}"
    for spaces in range(3):
        padded = {"Authorization": "Bearer " + " " * spaces + env.token + " " * spaces}
        assert env.client.get(url, headers=padded).status_code == 200
    for spaces in range(3, 8):  # the same token, however padded: its bucket is empty
        padded = {"Authorization": "Bearer " + " " * spaces + env.token}
        assert env.client.get(url, headers=padded).status_code == 429


def test_garbage_tokens_share_their_address_bucket(limited: tuple[Env, list[float]]) -> None:
    env, _ = limited
    url = f"/api/v2/workspaces/{env.ws_id}"
    assert env.client.get(url, headers=env.auth).status_code == 200  # valid: its own bucket from now on
    answers = [env.client.get(url, headers={"Authorization": f"Bearer garbage-{n}"}).status_code for n in range(5)]
    assert answers == [401, 401, 429, 429, 429]  # the address's bucket (its first request counted there too)
    assert env.client.get(url, headers={"Authorization": "Basic Zm9vOmJhcg=="}).status_code == 429
    assert env.client.get(url).status_code == 429
    assert env.client.get(url, headers=env.auth).status_code == 200  # the known token is not held back


# The tfe provider's version check (terraform-provider-tfe 0.74+, `internal/provider/tfe_version.go` and
# `ConfiguredClient.RemoteTFEVersion`), as it decides: X-TFE-Current-Version when sent, else X-TFE-Version; a
# `vYYYYMM-N` minimum is met by any numeric version, a numeric minimum never by a `vYYYYMM-N` one.
_LEGACY = re.compile(r"v(\d{6})-(\d+)")
_MODERN = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?")


def _provider_meets(headers: dict[str, str], minimum: str) -> bool:
    remote = headers.get("X-TFE-Current-Version") or headers.get("X-TFE-Version", "")
    if headers.get("TFP-AppName") == "HCP Terraform":
        return True
    remote_legacy, minimum_legacy = _LEGACY.fullmatch(remote), _LEGACY.fullmatch(minimum)
    remote_modern, minimum_modern = _MODERN.fullmatch(remote), _MODERN.fullmatch(minimum)
    assert minimum_legacy or minimum_modern, minimum
    if minimum_modern and remote_legacy:
        return False
    if minimum_legacy and remote_modern:
        return True
    if minimum_legacy and remote_legacy:
        return tuple(map(int, remote_legacy.groups())) >= tuple(map(int, minimum_legacy.groups()))
    if minimum_modern and remote_modern:
        return tuple(map(int, remote_modern.groups()[:3])) >= tuple(map(int, minimum_modern.groups()[:3]))
    return False


def test_the_comparison_as_the_provider_makes_it() -> None:
    legacy_only = {"X-TFE-Version": "v202410-1"}
    assert _provider_meets(legacy_only, "v202404-1") and not _provider_meets(legacy_only, "v202411-1")
    assert not _provider_meets(legacy_only, "1.0.0")  # a numeric minimum is never met by a monthly version
    numeric = {"X-TFE-Version": "v202410-1", "X-TFE-Current-Version": "1.0.3"}
    assert _provider_meets(numeric, "v209912-9")  # any monthly minimum is met by a numeric version
    assert _provider_meets(numeric, "1.0.0") and not _provider_meets(numeric, "1.1.0")
    assert _provider_meets({"TFP-AppName": "HCP Terraform"}, "2.0.1")


def test_x_tfe_current_version_is_numeric_and_enables_what_terrace_has(state_env: Env) -> None:
    headers = dict(state_env.client.get("/api/v2/ping", headers=state_env.auth).headers)
    current = headers["x-tfe-current-version"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", current)  # as TFE sends it (`1.0.3`): go-tfe's RemoteTFENumericVersion
    assert re.fullmatch(r"v\d{6}-\d+", headers["x-tfe-version"])  # kept for terraform and older providers
    sent = {"X-TFE-Version": headers["x-tfe-version"], "X-TFE-Current-Version": current,
            "TFP-AppName": headers["tfp-appname"]}  # fmt: skip
    assert _provider_meets(sent, "v202404-1")  # workspace run task stages: Terrace has them
    assert _provider_meets(sent, "1.0.0")  # variable set reads with include=stacks (answered below)
    assert not _provider_meets(sent, "2.0.1")  # organization token TTL policies: Terrace has none
    # terraform's cloud backend: the YYYYMM of X-TFE-Version, as an integer, at least 202302 (structured run output)
    assert int(headers["x-tfe-version"][1:].split("-")[0]) >= 202302
    # providers before 0.74 compared X-TFE-Version as a string
    assert headers["x-tfe-version"] > "v202404"


def test_a_variable_set_read_asking_for_stacks_too_is_answered(state_env: Env) -> None:
    body = {"data": {"type": "varsets", "attributes": {"name": "shared", "global": False}}}
    created = state_env.client.post("/api/v2/organizations/acme/varsets", json=body, headers=state_env.auth)
    assert created.status_code == 201, created.text
    varset_id = created.json()["data"]["id"]
    read = state_env.client.get(f"/api/v2/varsets/{varset_id}?include=workspaces,stacks", headers=state_env.auth)
    assert read.status_code == 200 and read.json()["data"]["id"] == varset_id
