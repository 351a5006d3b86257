"""The destination rules for URLs users give the server (domain/destinations.py): a 422 naming the field."""

from __future__ import annotations

import pytest
from terrace.domain.destinations import LOOPBACK_ONLY, Allowance, check_url
from terrace.domain.errors import Invalid

NONE = Allowance()


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/",
        "http://127.0.0.1:8080/",
        "http://localhost/",
        "http://api.localhost/",
        "http://10.0.0.1/",
        "http://192.168.1.1/",
        "http://172.16.0.1/",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://[::ffff:10.0.0.1]/",
        "ftp://example.com/",
        "example.com/hook",
        "http:///nohost",
        "http://user:pw@example.com/",
        "http://example.com:99999/",
        "https://example.com/" + "a" * 2100,
        "",
        42,
    ],
)
def test_refused_with_a_422_naming_the_field(url: object) -> None:
    with pytest.raises(Invalid) as refused:
        check_url(url, "url", NONE)
    assert refused.value.pointer == "/data/attributes/url"


@pytest.mark.parametrize("url", ["https://hooks.slack.com/services/T/B/X", "http://93.184.215.14:8080/x"])
def test_public_destinations_pass(url: str) -> None:
    destination = check_url(url, "url", NONE)
    assert destination.url == url and destination.scheme in ("http", "https")


def test_the_deployment_may_allow_loopback_hosts_and_networks() -> None:
    assert check_url("http://127.0.0.1:9000/x", "url", LOOPBACK_ONLY).port == 9000
    assert check_url("http://localhost:9000/x", "url", LOOPBACK_ONLY).host == "localhost"
    inside = Allowance.parse(["10.20.0.0/16", "Hooks.Internal."])
    assert check_url("http://10.20.3.4/", "url", inside).host == "10.20.3.4"
    with pytest.raises(Invalid):
        check_url("http://10.21.0.1/", "url", inside)
    with pytest.raises(Invalid):
        check_url("http://169.254.169.254/", "url", LOOPBACK_ONLY)
