"""The logs function (functions/logs/handler.py): the CLI's log reads at the log-read origin (`TERRACE_LOG_READ_URL`,
on AWS the function's own URL), answered from the signature alone; any other request is refused before a
container is built, a bad signature before the run is read."""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from run_helpers import RunEnv, make_run_env

HANDLER = Path(__file__).resolve().parents[2] / "functions" / "logs" / "handler.py"
ORIGIN = "https://abc123.lambda-url.us-east-1.on.aws"


def _handler() -> Any:
    spec = importlib.util.spec_from_file_location("terrace_fn_logs", HANDLER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _event(url: str, method: str = "GET") -> dict[str, Any]:
    """A function URL's event (payload format 2.0) for `url`."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": parts.path,
        "rawQueryString": parts.query,
        "headers": {"host": parts.netloc, "user-agent": "go-tfe"},
        **({"queryStringParameters": query} if query else {}),
        "requestContext": {"domainName": parts.netloc, "http": {"method": method, "path": parts.path}},
        "isBase64Encoded": False,
    }


@pytest.fixture(scope="module")
def env_and_url() -> tuple[RunEnv, str]:
    env = make_run_env(log_read_url=ORIGIN + "/")
    env.create_run(env.upload_config())
    spec = env.claim("r1")
    assert env.runner("PUT", f"/jobs/{spec['job_id']}/logs?offset=0", content=b"Initializing...\n").status_code == 204
    plan = env.api("GET", f"/plans/{spec['job_id']}").json()["data"]["attributes"]
    return env, str(plan["log-read-url"])


@pytest.fixture
def handler(env_and_url: tuple[RunEnv, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    module = _handler()
    monkeypatch.setattr(module, "_get_container", lambda: env_and_url[0].container)
    return module


def test_log_read_urls_point_at_the_log_read_origin(env_and_url: tuple[RunEnv, str]) -> None:
    env, url = env_and_url
    assert url.startswith(ORIGIN + "/api/v2/logs/plan-"), url
    assert env.client.get(url.removeprefix(ORIGIN) + "?limit=100&offset=0").content == b"\x02Initializing...\n"


def test_the_function_answers_a_signed_read_with_the_bytes(env_and_url: tuple[RunEnv, str], handler: Any) -> None:
    _, url = env_and_url
    answer = handler.lambda_handler(_event(url + "?limit=100&offset=0"), None)
    assert answer["statusCode"] == 200 and answer["isBase64Encoded"] is True
    assert base64.b64decode(answer["body"]) == b"\x02Initializing...\n"
    assert answer["headers"]["cache-control"] == "no-store"
    later = handler.lambda_handler(_event(url + "?limit=100&offset=17"), None)  # nothing new: answered at once
    assert later["statusCode"] == 200 and base64.b64decode(later["body"]) == b""


def test_a_bad_signature_or_expired_link_is_a_404_before_the_run_is_read(
    env_and_url: tuple[RunEnv, str], handler: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    env, url = env_and_url
    store = env.container.logs._store
    monkeypatch.setattr(store, "load", lambda *_: pytest.fail("the run was read for a forged link"))
    prefix, _, signature = url.rpartition("/")
    forged = prefix + "/" + ("A" if signature[0] != "A" else "B") + signature[1:]
    answer = handler.lambda_handler(_event(forged + "?limit=100&offset=0"), None)
    assert answer["statusCode"] == 404
    assert json.loads(answer["body"])["errors"][0]["detail"] == "log not found or link expired"


@pytest.mark.parametrize(
    ("path", "method", "status"),
    [
        ("/api/v2/runs", "GET", 404),
        ("/api/v2/organizations/acme/workspaces", "GET", 404),
        ("/", "GET", 404),
        ("/api/v2/logs/plan-abc/1700000000/sig/extra", "GET", 404),
        ("/api/v2/logs/state-abc/1700000000/sig", "GET", 404),
        ("/api/v2/logs/plan-abc/1700000000/sig", "POST", 405),
        ("/api/v2/logs/plan-abc/1700000000/sig", "DELETE", 405),
    ],
)
def test_anything_but_a_log_read_is_refused_before_a_container_is_built(
    path: str, method: str, status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _handler()
    monkeypatch.setattr(module, "_get_container", lambda: pytest.fail("a container was built"))
    answer = module.lambda_handler(_event(ORIGIN + path, method), None)
    assert answer["statusCode"] == status
    assert json.loads(answer["body"])["errors"][0]["status"] == str(status)


@pytest.mark.parametrize("query", ["offset=x&limit=10", "offset=-1&limit=10", "offset=0&limit=99999999999999"])
def test_a_bad_window_is_a_400(env_and_url: tuple[RunEnv, str], handler: Any, query: str) -> None:
    _, url = env_and_url
    answer = handler.lambda_handler(_event(f"{url}?{query}"), None)
    assert answer["statusCode"] == 400
    assert "offset and limit" in json.loads(answer["body"])["errors"][0]["detail"]


def test_the_warm_up_invocation_builds_the_container_and_reads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _handler()
    built: list[bool] = []
    monkeypatch.setattr(module, "_get_container", lambda: built.append(True))
    assert module.lambda_handler({"warm-up": True}, None) == {"warmed": True} and built == [True]
    # a URL request never is one, whatever its body or query carries: refused before a container is built
    monkeypatch.setattr(module, "_get_container", lambda: pytest.fail("a container was built"))
    disguised = {**_event(ORIGIN + "/api/v2/runs"), "warm-up": True}
    assert module.lambda_handler(disguised, None)["statusCode"] == 404


def test_the_api_s_warm_up_is_an_async_invoke_with_the_event_the_function_knows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from terrace.adapters import boto_session
    from terrace.config import Settings
    from terrace.wiring.aws_adapters import warm_up

    sent: list[dict[str, Any]] = []

    class Session:
        def client(self, *_args: Any, **_kwargs: Any) -> Any:
            return self

        def invoke(self, **kwargs: Any) -> None:
            sent.append({**kwargs, "Payload": json.loads(kwargs["Payload"])})

    monkeypatch.setattr(boto_session, "session", lambda _region: Session())
    warm_up(Settings(table_name="t", blob_bucket="b"), "terrace-logs")
    assert sent == [{"FunctionName": "terrace-logs", "InvocationType": "Event", "Payload": _handler().WARM_UP}]
