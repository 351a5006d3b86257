"""What the CLI's log polls cost: a poll of a running phase reads only the chunks written since the previous poll
(`services/runs/log_cursors.py`), never the whole log again; what it answers is exactly what a whole read answers
(a secret split across chunks is masked all the same); and on AWS a read is never held waiting."""

from __future__ import annotations

import random
from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_table import MemoryTable
from terrace.domain.masking import Masker
from terrace.services.runs.log_cursors import LogCursors
from terrace.services.runs.logs import LogService
from terrace.services.runs.store_logs import LogStore

SECRET = "hunter2-Kw22-secret"


class CountingTable:
    """The run store's table, counting the log chunks each query of a log partition returns."""

    def __init__(self, inner: Any) -> None:
        self._inner, self.returned = inner, list[int]()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def query(self, pk: str, **kwargs: Any) -> Any:
        found = self._inner.query(pk, **kwargs)
        if pk.endswith("#log"):
            self.returned.append(len(found))
        return found


def _running_plan(env: RunEnv) -> tuple[str, str]:
    env.create_run(env.upload_config())
    job_id = str(env.claim("r1")["job_id"])
    url = env.api("GET", f"/plans/{job_id}").json()["data"]["attributes"]["log-read-url"]
    return job_id, "/" + str(url).split("://", 1)[1].split("/", 1)[1]


def _sensitive(env: RunEnv, value: str) -> None:
    body = {
        "data": {"type": "vars", "attributes": {"key": "TOKEN", "value": value, "category": "env", "sensitive": True}}
    }
    assert env.api("POST", f"/workspaces/{env.workspace_id}/vars", body).status_code == 201


def test_each_poll_reads_only_the_chunks_written_since_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_run_env(log_read_wait_s=0)
    job_id, path = _running_plan(env)
    counting = CountingTable(env.container.run_store.logs._table)
    monkeypatch.setattr(env.container.run_store.logs, "_table", counting)
    seen, offset = b"", 0
    for n in range(20):
        line = f"line {n}\n".encode()
        assert env.runner("PUT", f"/jobs/{job_id}/logs?offset={offset}", content=line).status_code == 204
        offset += len(line)
        counting.returned.clear()
        answer = env.client.get(f"{path}?limit=65536&offset={len(seen)}")
        assert answer.status_code == 200 and answer.content == (b"\x02" if not seen else b"") + line
        seen += answer.content
        assert counting.returned == [1], counting.returned  # the new chunk only: not the 1..20 before it
        counting.returned.clear()
        assert env.client.get(f"{path}?limit=65536&offset={len(seen)}").content == b""
        assert counting.returned == [0]  # nothing new: one empty answer
    assert seen == b"\x02" + b"".join(f"line {n}\n".encode() for n in range(20))


def test_a_secret_split_across_chunks_is_masked_in_incremental_reads() -> None:
    env = make_run_env(log_read_wait_s=0)
    _sensitive(env, SECRET)
    job_id, path = _running_plan(env)
    text = f"token={SECRET} and again {SECRET}\nend\n".encode()
    seen, offset = b"", 0
    for piece in (text[:10], text[10:14], text[14:30], text[30:]):  # the secret cut three times
        assert env.runner("PUT", f"/jobs/{job_id}/logs?offset={offset}", content=piece).status_code == 204
        offset += len(piece)
        seen += env.client.get(f"{path}?limit=65536&offset={len(seen)}").content
    done = env.runner("POST", f"/jobs/{job_id}/finish", json={"runner_id": "r1", "status": "finished"})
    assert done.status_code == 200
    seen += env.client.get(f"{path}?limit=65536&offset={len(seen)}").content
    assert seen == b"\x02token=*** and again ***\nend\n\x03"


@pytest.mark.parametrize("seed", range(6))
def test_incremental_reads_answer_what_a_whole_read_answers(seed: int) -> None:
    """Random chunks, secrets cut anywhere, readers polling at random, a second process starting mid-log."""
    draw = random.Random(seed)
    secrets = ["s3cr3t-value", 'quo"ted-Kw22', "abcd"]
    masker = Masker(secrets)
    text = b"".join(draw.choice([b"x", b"\n", b"abc", b"s3cr3t-", *[s.encode() for s in secrets]]) for _ in range(400))
    store = LogStore(MemoryTable())
    first, second = LogCursors(store), LogCursors(store)
    position = 0
    while position < len(text):
        size = draw.randint(1, 40)
        store.put("plan-1", 1, position, text[position : position + size])
        position += size
        for cursors in (first, second) if position > len(text) // 2 else (first,):
            if draw.random() < 0.6:
                got = cursors.stream("plan-1", -1, lambda: masker, final=False)
                assert got is not None and masker.mask(text).startswith(got)  # what a reader saw never changes
    for cursors in (first, second):
        assert cursors.stream("plan-1", -1, lambda: masker, final=True) == masker.mask(text)


def test_a_change_of_the_sensitive_values_starts_the_cursor_over() -> None:
    store = LogStore(MemoryTable())
    cursors = LogCursors(store)
    store.put("plan-1", 1, 0, b"password=letmein\n")
    assert cursors.stream("plan-1", -1, lambda: Masker([]), final=False) == b"password=letmein\n"
    store.put("plan-1", 1, 17, b"again letmein\n")
    masked = cursors.stream("plan-1", -1, lambda: Masker(["letmein"]), final=True)
    assert masked == b"password=***\nagain ***\n"


def test_cursors_are_bounded() -> None:
    store = LogStore(MemoryTable())
    cursors = LogCursors(store, max_phases=2, max_bytes=10)
    for n in range(3):
        store.put(f"plan-{n}", 1, 0, b"short")
        cursors.stream(f"plan-{n}", -1, lambda: Masker([]), final=False)
    assert list(cursors._cursors) == ["plan-1", "plan-2"]
    store.put("plan-9", 1, 0, b"more than ten bytes")
    assert cursors.stream("plan-9", -1, lambda: Masker([]), final=False) == b"more than ten bytes"
    assert "plan-9" not in cursors._cursors  # too large to hold: read whole next time, as before


def test_on_aws_a_log_read_is_never_held_waiting() -> None:
    env = make_run_env(log_read_wait_s=0)
    _, path = _running_plan(env)
    logs = env.container.logs
    assert isinstance(logs, LogService)
    sleeps: list[float] = []
    logs._sleep = sleeps.append
    assert env.client.get(f"{path}?limit=1000&offset=1").content == b""
    assert sleeps == []
