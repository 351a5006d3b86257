"""SIGKILL of the embedded server during state writes and lock/unlock (issue 30, process kills).

State clients write four workspaces in a loop — two through terraform's http backend (LOCK, POST, UNLOCK), two
through the TFC API (lock, state version created inline or pending then uploaded, unlock) — while the server
is killed with SIGKILL at a random moment; it restarts on the same data directory, and:

- every acknowledged state version (a 2xx reached the client) is listed and its download is byte-identical
  (md5); the history lists serials newest first with no gap between acknowledged ones reordered; the current
  version is the last acknowledged or the write that was in flight (never older);
- the lock rule: a lock belongs to its holder, not to the server process. An acknowledged lock is still held
  after the restart, an acknowledged unlock still released, an unacknowledged one either; the holder's own unlock
  (what terraform does after an error) then frees it. No lock is ever held by two (a second holder is refused).
- no process of the dead server is left, and no half-written upload stays in the blob store's temporary folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kill_server import Client, ProofServer, descendants, processes_mentioning, serving, sized, wait_for
from kill_state_clients import ApiWriter, HttpBackendWriter, Writer

pytestmark = [pytest.mark.proof, pytest.mark.timeout(sized(300, 1800))]


ROUNDS = {"embedded": sized(1, 20), "moto": sized(0, 10)}  # moto: make proof only (quick keeps make test short)


@pytest.fixture(params=["embedded", "moto"])
def proof_server(request: pytest.FixtureRequest) -> Iterator[ProofServer]:
    if not ROUNDS[request.param]:
        pytest.skip(f"the {request.param} kill rounds run in make proof (TERRACE_PROOF=full)")
    with serving(backend=request.param) as server:
        yield server


def _workspace(client: Client, name: str) -> str:
    body = {"data": {"type": "workspaces", "attributes": {"name": name, "execution-mode": "local"}}}
    org = client.info.organization
    return str(client.request("POST", f"/api/v2/organizations/{org}/workspaces", body, expect=201).json()["data"]["id"])


def _history(client: Client, workspace_id: str) -> list[dict]:
    found: list[dict] = []
    page = 1
    while page:
        body = client.request(
            "GET", f"/api/v2/workspaces/{workspace_id}/state-versions?page[size]=100&page[number]={page}"
        )
        found += body.json()["data"]
        page = body.json().get("meta", {}).get("pagination", {}).get("next-page") or 0
    return found


def _check(client: Client, writer: Writer) -> None:
    """What survived the kill for one writer's workspace."""
    history = _history(client, writer.workspace_id)
    serials = [sv["attributes"]["serial"] for sv in history]
    assert serials == sorted(serials, reverse=True), f"{writer.workspace}: history out of order: {serials}"
    # a pending version a retried create replaced is listed `discarded` beside the one that landed
    by_serial = {sv["attributes"]["serial"]: sv for sv in history if sv["attributes"]["status"] == "finalized"}
    by_id = {sv["id"]: sv for sv in history}
    for acked in writer.acked:
        sv = by_id.get(acked.sv_id) if acked.sv_id else by_serial.get(acked.serial)
        assert sv is not None, f"{writer.workspace}: acknowledged serial {acked.serial} lost (have {serials})"
        assert sv["attributes"]["status"] == "finalized", f"{writer.workspace} serial {acked.serial}: {sv}"
        url = sv["attributes"]["hosted-state-download-url"]
        body = client.request("GET", url, follow_redirects=True)
        assert hashlib.md5(body.content).hexdigest() == acked.md5, f"{writer.workspace} serial {acked.serial}"  # noqa: S324
    current = client.request("GET", f"/api/v2/workspaces/{writer.workspace_id}/current-state-version", expect=None)
    if writer.acked:
        assert current.status_code == 200, current.text
        serial = current.json()["data"]["attributes"]["serial"]
        assert serial >= writer.acked[-1].serial, f"{writer.workspace}: current {serial} older than acknowledged"
        assert serial < writer.next_serial
    # the writer resumes above whatever landed, as terraform does (it reads the state first)
    writer.next_serial = max([writer.next_serial, *serials]) + 1


def _check_lock(client: Client, writer: Writer) -> None:
    ws = client.request("GET", f"/api/v2/workspaces/{writer.workspace_id}").json()["data"]
    locked = ws["attributes"]["locked"]
    if writer.locked is True:
        assert locked, f"{writer.workspace}: an acknowledged lock was lost in the kill"
    elif writer.locked is False:
        assert not locked, f"{writer.workspace}: an acknowledged unlock came back as a lock"
    if locked and isinstance(writer, HttpBackendWriter):  # never two holders: another ID is refused
        other = {**writer._lock_info(), "ID": "someone-else"}
        refused = client.request("LOCK", writer.path, expect=None, json=other)
        assert refused.status_code in (409, 423), f"{writer.workspace}: a held lock granted again: {refused.text}"
    writer.recover()
    ws = client.request("GET", f"/api/v2/workspaces/{writer.workspace_id}").json()["data"]
    assert not ws["attributes"]["locked"], f"{writer.workspace}: the holder's unlock did not free it: {ws}"


def _abandoned(folder: Path) -> list[str]:
    """Temporary files of the blob store no live writer holds (a writer locks its file until it is in place)."""
    found = []
    for path in folder.glob("*") if folder.is_dir() else []:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            found.append(path.name)
        except BlockingIOError:
            pass  # the running server is writing it
        finally:
            os.close(fd)
    return found


def _no_leftovers(server: ProofServer, killed_pid: int) -> None:
    data = str(server.data)
    wait_for(lambda: not descendants(killed_pid), 30, "the killed server's children to go")
    left = {pid: cmd for pid, cmd in processes_mentioning(data).items() if pid != server.pid}
    assert not left, f"processes of the killed server survive it: {left}"


def test_acknowledged_state_writes_and_locks_survive_sigkill(proof_server: ProofServer, proof_rng) -> None:
    rounds = ROUNDS[proof_server.backend]
    info = proof_server.start()
    client = Client(info)
    writers: list[Writer] = []
    for n in range(4):
        kind = HttpBackendWriter if n % 2 == 0 else ApiWriter
        name = f"kill-state-{n}"
        ws_id = _workspace(client, name)
        writers.append(kind(client, name, ws_id, proof_rng))
    outcomes: dict[str, int] = {}
    for _ in range(rounds):
        stop = threading.Event()
        threads = [threading.Thread(target=w.loop, args=(stop,), daemon=True) for w in writers]
        for thread in threads:
            thread.start()
        # wait for a random number of acknowledged writes, then a random instant more
        goal = sum(w.writes for w in writers) + proof_rng.randint(1, 12)
        wait_for(lambda goal=goal, threads=threads: sum(w.writes for w in writers) >= goal
                 or not any(t.is_alive() for t in threads), 120, "the writers to write", interval=0.01)  # fmt: skip
        stop.wait(proof_rng.uniform(0, 0.3))
        pid = proof_server.pid
        proof_server.kill()
        for thread in threads:
            thread.join(60)
        client.close()
        for w in writers:
            failed = [e for e in w.errors if "unexpected" in e]
            assert not failed, f"{w.workspace}: the server answered wrongly before the kill: {failed}"
            outcomes[w.in_flight.split(" ")[0] or "idle"] = outcomes.get(w.in_flight.split(" ")[0] or "idle", 0) + 1
            w.errors.clear()
        _no_leftovers(proof_server, pid)

        info = proof_server.start()
        client = Client(info)
        for w in writers:
            w.client = client
            _check(client, w)
            _check_lock(client, w)
            _check(client, w)  # an upload the holder sent again (recover) is now acknowledged too
            w.in_flight = ""
        leftover = _abandoned(proof_server.data / "blobs" / "tmp")
        assert not leftover, f"half-written uploads left in the blob store: {leftover}"
    acknowledged = sum(len(w.acked) for w in writers)
    print(
        f"\nkill proof, state on {proof_server.backend}: {rounds} kills, {acknowledged} acknowledged writes"
        f" checked, killed during: {outcomes}"
    )
    client.close()
    assert proof_server.stop() == 0
