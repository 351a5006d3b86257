"""A destination URL with a non-ASCII host is checked as the name the resolver sends (its IDNA form): `127。0。0。1`
(full-width dots) is the loopback address, refused with a 422 naming the field, never a 500; a name that is no
domain name is a 422 too. A bad URL already stored fails its deliveries, each one recorded, and the events worker
goes on."""

from __future__ import annotations

import ipaddress
from typing import Any

from notification_helpers import body, create, notification_env, pump
from terrace.adapters.httpx_outbound import HttpxOutbound
from terrace.domain.destinations import LOOPBACK_ONLY, IPAddress

INWARD = ["http://127。0。0。1/hook", "http://１２７．０．０．１:8080/hook", "http://127｡0｡0｡1/hook", "https://[::1]/x"]
NOT_A_NAME = "http://ab\u00fc" + "c" * 70 + ".example/hook"  # a label longer than 63 characters once encoded


def _post(env: Any, url: str) -> Any:
    return env.api("POST", f"/workspaces/{env.workspace_id}/notification-configurations", body(url=url))


def test_a_non_ascii_host_is_checked_as_its_idna_form() -> None:
    env = notification_env()
    for url in [*INWARD, NOT_A_NAME]:
        refused = _post(env, url)
        assert refused.status_code == 422, (url, refused.text)
        assert refused.json()["errors"][0]["source"]["pointer"] == "/data/attributes/url", url
    assert "loopback" in _post(env, INWARD[0]).json()["errors"][0]["detail"]
    assert "not a valid domain name" in _post(env, NOT_A_NAME).json()["errors"][0]["detail"]
    nc = create(env, url="https://bücher.example/hook?x=ü")
    assert nc["attributes"]["url"] == "https://xn--bcher-kva.example/hook?x=ü"  # kept as it is sent
    patch = {"data": {"type": "notification-configurations", "attributes": {"url": INWARD[0]}}}
    assert env.api("PATCH", f"/notification-configurations/{nc['id']}", patch).status_code == 422
    task = {"data": {"type": "tasks", "attributes": {"name": "t", "url": INWARD[0], "hmac-key": "k"}}}
    refused = env.api("POST", f"/organizations/{env.organization}/tasks", task)
    assert refused.status_code == 422 and "loopback" in refused.text, refused.text


def _loopback(host: str, port: int) -> list[IPAddress]:
    return [ipaddress.ip_address("127.0.0.1")]


def test_a_bad_url_already_stored_fails_its_deliveries_and_the_worker_goes_on() -> None:
    env = notification_env()
    env.container.outbound = HttpxOutbound(LOOPBACK_ONLY, resolver=_loopback)  # as `make dev` allows loopback
    nc = create(env, triggers=["run:created"])
    store = env.container.notification_store
    stored = store.load(nc["id"])
    version = stored.version
    stored.url, stored.enabled = NOT_A_NAME, True  # saved before the URL rules read IDNA
    store.replace(stored, version)
    env.create_run(env.upload_config())
    assert pump(env) == 5  # every attempt handled, none raised
    responses = store.load(nc["id"]).delivery_responses
    assert [r["successful"] for r in responses] == [False] * 5
    assert all("not a valid domain name" in r["body"] for r in responses), responses
