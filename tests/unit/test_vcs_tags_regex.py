"""A workspace's `tags-regex` is a tenant's regular expression: it is compiled at save time (one that does not
compile, or whose counted repeats would expand past the bound when the `regex` library compiles it, is a 422 naming
the field) and matched by `regex` with a timeout, so a catastrophic pattern (`(a|aa)+$` on a long tag backtracks
for ever under `re`, holding the interpreter) costs a bounded moment and starts nothing, logged, while the events
worker goes on."""

from __future__ import annotations

import logging
import subprocess
import sys
import time

import pytest
from terrace.domain import tenant_regex, vcs_events
from test_vcs_connections import repo
from test_vcs_deliveries import REPO, _deliver, _runs, _setup, _work

CATASTROPHIC = r"(a|aa)+$"
LONG_TAG = "a" * 60 + "!"  # Fibonacci(60) ways to split: no end under backtracking without a timeout


def test_a_catastrophic_tags_regex_times_out_instead_of_holding_the_process() -> None:
    # in a child, so that a matcher without a timeout fails this test by its deadline instead of hanging the suite
    program = (
        "from terrace.domain import vcs_events as v\n"
        f"try:\n    v.tag_matches({CATASTROPHIC!r}, {LONG_TAG!r}); print('matched')\n"
        "except v.tenant_regex.PatternTimedOut:\n    print('timed out')\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "timed out" and time.monotonic() - started < 20


def test_tags_regex_matches_as_before_within_its_time() -> None:
    assert vcs_events.tag_matches(r"^v\d+\.\d+\.\d+$", "v1.2.3")
    assert not vcs_events.tag_matches(r"^v\d+\.\d+\.\d+$", "v1.2")
    assert not vcs_events.tag_matches(None, "v1.2.3") and not vcs_events.tag_matches("", "v1")
    assert not vcs_events.tag_matches(r".*", "v" * (vcs_events.TAG_MATCH_MAX + 1))  # longer tags never match
    with pytest.raises(tenant_regex.PatternTimedOut):
        vcs_events.tag_matches(CATASTROPHIC, LONG_TAG)


def test_a_tags_regex_that_does_not_compile_is_a_422_at_save_time() -> None:
    env, _forge, token = _setup()
    # `regex` expands counted repeats when it compiles: these would allocate gigabytes; refused in a moment
    started = time.monotonic()
    for pattern in ("(", "[a-", "a{2,1}", "*a", "x{100000000}", "x{4294967294}", "((a{200}){200}){200}"):
        body = {"data": {"type": "workspaces", "attributes": {"vcs-repo": repo(token, **{"tags-regex": pattern})}}}
        answer = env.api("PATCH", f"/workspaces/{env.workspace_id}", body)
        assert answer.status_code == 422, (pattern, answer.text)
        assert answer.json()["errors"][0]["source"]["pointer"] == "/data/attributes/vcs-repo/tags-regex"
    assert time.monotonic() - started < 5
    assert tenant_regex.compile_bounded("((a{100}){100})")  # ten thousand items still compile


def test_a_tag_whose_match_times_out_starts_nothing_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    env, forge, token = _setup(**{"vcs-repo": None})
    body = {"data": {"type": "workspaces", "attributes": {"vcs-repo": repo(token, **{"tags-regex": CATASTROPHIC})}}}
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", body).status_code == 200
    sha = forge.push(REPO, LONG_TAG, {"main.tf": b'output "x" { value = 1 }\n'}, "release")
    payload = {"ref": f"refs/tags/{LONG_TAG}", "before": "0" * 40, "after": sha, "repository": {"full_name": REPO},
               "sender": {"login": "octocat"}, "compare": ""}  # fmt: skip
    assert _deliver(env, forge, "push", payload, "d-tag").status_code == 202
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="terrace.vcs"):
        _work(env)
    assert time.monotonic() - started < 5
    assert _runs(env) == []
    assert any("starts nothing" in r.getMessage() and "ran out" in r.getMessage() for r in caplog.records)
    # a tag the same workspace's pattern matches in time still runs
    sha = forge.push(REPO, "aaaa", {"main.tf": b'output "x" { value = 2 }\n'}, "release 2")
    payload.update({"ref": "refs/tags/aaaa", "after": sha})
    assert _deliver(env, forge, "push", payload, "d-tag-2").status_code == 202
    _work(env)
    assert len(_runs(env)) == 1
