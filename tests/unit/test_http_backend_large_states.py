"""Large states through the http backend: a GET above the redirect size is a 307 to the blob store (Lambda answers
hold 6 MB), a write above the inline limit is a clear 413 naming the way out, and the indexer leaves states too
large to parse in its memory unindexed, saying why. (tests/e2e/test_state_journey.py follows the 307 with a real
terraform.)"""

from __future__ import annotations

import base64

from state_helpers import make_env, md5, null_resource, state_bytes
from terrace.config import Settings
from terrace.services.events import landed_event

BASE = {"table_name": "memory", "blob_bucket": "memory", "url_signing_secret": "test-secret"}


def basic(token: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"t:{token}".encode()).decode()}


def test_a_state_above_the_redirect_size_is_a_307_to_a_presigned_url_and_a_small_one_is_streamed():
    body = state_bytes(1, resources=[null_resource("a", "1")])
    env = make_env(Settings(**BASE, http_state_redirect_bytes=len(body) - 1))
    url = f"/state/v1/{env.org}/big"
    assert env.client.post(url, headers=basic(env.token), content=body).status_code == 200
    answer = env.client.get(url, headers=basic(env.token), follow_redirects=False)
    assert answer.status_code == 307
    location = answer.headers["location"]
    assert location.startswith("memory://blobs/") and "/state/v1/" not in location
    small = make_env(Settings(**BASE, http_state_redirect_bytes=len(body)))
    assert small.client.post(url, headers=basic(small.token), content=body).status_code == 200
    streamed = small.client.get(url, headers=basic(small.token), follow_redirects=False)
    assert streamed.status_code == 200 and streamed.content == body


def test_a_write_above_the_inline_limit_is_a_413_that_names_the_way_out():
    body = state_bytes(1, resources=[null_resource("a", "1")])
    env = make_env(Settings(**BASE, max_inline_state_bytes=len(body) - 1))
    answer = env.client.post(f"/state/v1/{env.org}/big", headers=basic(env.token), content=body)
    assert answer.status_code == 413, answer.text
    detail = answer.json()["detail"]
    assert "http backend takes states of up to" in detail and "`cloud` block" in detail
    assert env.container.workspaces.find_id(env.org, "big") is None  # nothing half-written


def test_the_indexer_leaves_a_state_too_large_for_its_memory_unindexed_and_says_why():
    raw = state_bytes(1, resources=[null_resource("a", "1")])
    env = make_env(Settings(**BASE, max_indexed_state_bytes=len(raw) - 1))
    env.lock()
    created = env.push(None, 1, md5_hex=md5(raw))  # a two-step upload: the events worker indexes it
    assert created.status_code == 201, created.text
    data = created.json()["data"]
    key = data["attributes"]["hosted-state-upload-url"].removeprefix("memory://blobs/").split("?", 1)[0]
    env.container.blobs.put(key, raw)
    env.container.events.handle(landed_event(key))
    assert env.drain_events()  # state.uploaded, handled by the indexer
    sv = env.container.state_versions.get(env.principal, data["id"])
    assert sv.index_error and "not indexed" in sv.index_error and str(len(raw)) in sv.index_error
    assert env.ws().resource_count == 0
