"""`GET /api/meta/ip-ranges` (go-tfe v1.109's TestIPRangesRead): the deployment's own addresses in HCP's shape, as
its operator configured them (none when unset: never guessed), refused at start when not CIDRs, and 304 to a
client whose `If-Modified-Since` is not older than them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from fastapi.testclient import TestClient
from terrace.bootstrap import build_memory
from terrace.config import ConfigurationError, Settings
from terrace.web.app import create_app

BASE = {"TERRACE_TABLE": "memory", "TERRACE_BLOB_BUCKET": "memory", "TERRACE_URL_SIGNING_SECRET": "s"}


def _client(**env: str) -> TestClient:
    return TestClient(create_app(build_memory(Settings.from_env({**BASE, **env}))))


def test_the_operators_ranges_in_hcps_shape_and_none_unset() -> None:
    client = _client(
        TERRACE_IP_RANGES_API="192.0.2.0/24, 2001:db8::/32",
        TERRACE_IP_RANGES_NOTIFICATIONS="198.51.100.7",
        TERRACE_IP_RANGES_SENTINEL="198.51.100.7/32",
        TERRACE_IP_RANGES_VCS="203.0.113.0/28",
    )
    answer = client.get("/api/meta/ip-ranges")  # public, as HCP's
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/json")
    assert answer.json() == {
        "api": ["192.0.2.0/24", "2001:db8::/32"],
        "notifications": ["198.51.100.7/32"],
        "sentinel": ["198.51.100.7/32"],
        "vcs": ["203.0.113.0/28"],
    }
    assert answer.headers["Last-Modified"].endswith("GMT")
    assert _client().get("/api/meta/ip-ranges").json() == {"api": [], "notifications": [], "sentinel": [], "vcs": []}


def test_if_modified_since_answers_304_unless_older_than_the_ranges() -> None:
    client = _client(TERRACE_IP_RANGES_API="192.0.2.0/24")
    now = datetime.now(UTC)
    future = client.get("/api/meta/ip-ranges", headers={"If-Modified-Since": format_datetime(now + timedelta(days=2),
                                                                                            usegmt=True)})  # fmt: skip
    assert future.status_code == 304 and future.content == b""
    past = format_datetime(now - timedelta(days=2), usegmt=True)
    assert client.get("/api/meta/ip-ranges", headers={"If-Modified-Since": past}).json()["api"] == ["192.0.2.0/24"]
    # go-tfe's own spelling of the date; a value that is no date is ignored, as HTTP says
    go_tfe = (now + timedelta(hours=48)).strftime("%a, %d %b %Y 00:00:00 GMT")
    assert client.get("/api/meta/ip-ranges", headers={"If-Modified-Since": go_tfe}).status_code == 304
    assert client.get("/api/meta/ip-ranges", headers={"If-Modified-Since": "yesterday"}).status_code == 200


@pytest.mark.parametrize("value", ["10.0.0.1/8", "not-an-address", "300.1.1.1/32"])
def test_a_range_that_is_no_cidr_stops_the_process_at_start(value: str) -> None:
    with pytest.raises(ConfigurationError, match="TERRACE_IP_RANGES_VCS|ip_ranges_vcs"):
        Settings.from_env({**BASE, "TERRACE_IP_RANGES_VCS": value})
