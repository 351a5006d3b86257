"""API latency of workspace read, lock+unlock and current-state-version at 1 and 20 concurrent clients,
against the bare DynamoDB calls each of them makes, replayed straight to the same moto with boto3.

The calls an operation makes are recorded once with a botocore hook on the API's own DynamoDB client
(the API runs in this process); reads are replayed as recorded, writes as the same puts/transactions on
scratch keys without conditions (so they always succeed).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench.common import Api, Outcome, Size, local_stack, percentile, unique

READS = {"GetItem", "Query", "BatchGetItem", "Scan"}
OPERATIONS = ("workspace read", "lock+unlock", "current-state-version")


class Recorder:
    """Records (operation, params) of every DynamoDB call the API makes while `active`."""

    def __init__(self, client: Any) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.active = False
        client.meta.events.register("before-parameter-build.dynamodb", self._record)

    def _record(self, model: Any, params: Any, **_: Any) -> None:
        if self.active:
            self.calls.append((model.name, copy.deepcopy(params)))

    def record(self, action: Callable[[], None]) -> list[tuple[str, dict[str, Any]]]:
        self.calls, self.active = [], True
        try:
            action()
        finally:
            self.active = False
        return self.calls


def _scratch_put(op: dict[str, Any], table: str) -> dict[str, Any]:
    """A transaction/put element turned into an unconditional put of a scratch item of the same shape."""
    item = dict(op.get("Item") or op.get("Key") or {})
    item["pk"] = {"S": f"bench#{uuid.uuid4().hex}"}
    item.setdefault("sk", {"S": "x"})
    return {"TableName": op.get("TableName", table), "Item": item}


def replay(client: Any, calls: list[tuple[str, dict[str, Any]]], table: str) -> None:
    """Make the same DynamoDB calls straight to moto (writes re-keyed, unconditional)."""
    for name, params in calls:
        if name == "GetItem":
            client.get_item(**params)
        elif name == "Query":
            client.query(**params)
        elif name == "BatchGetItem":
            client.batch_get_item(**params)
        elif name == "TransactWriteItems":
            items = [{"Put": _scratch_put(next(iter(op.values())), table)} for op in params["TransactItems"]]
            client.transact_write_items(TransactItems=items)
        else:  # PutItem, UpdateItem, DeleteItem
            client.put_item(**_scratch_put(params, table))


def prepare_workspace(api: Api) -> str:
    """A local-execution workspace holding a small current state version."""
    ws_id = api.create_workspace(unique("lat"), **{"execution-mode": "local"})["id"]
    raw = json.dumps(
        {
            "version": 4,
            "terraform_version": "1.0.3",
            "serial": 1,
            "lineage": str(uuid.uuid4()),
            "outputs": {"hello": {"value": "world", "type": "string"}},
            "resources": [],
        }
    ).encode()
    api.lock(ws_id)
    api.request(
        "POST",
        f"/api/v2/workspaces/{ws_id}/state-versions",
        {
            "data": {
                "type": "state-versions",
                "attributes": {
                    "serial": 1,
                    "md5": hashlib.md5(raw).hexdigest(),
                    "state": base64.b64encode(raw).decode(),
                },
            }
        },
    )  # noqa: S324
    api.unlock(ws_id)
    return ws_id


def operation(api: Api, name: str, ws_id: str) -> Callable[[], None]:
    if name == "workspace read":
        return lambda: api.request("GET", f"/api/v2/workspaces/{ws_id}") and None
    if name == "current-state-version":
        return lambda: api.request("GET", f"/api/v2/workspaces/{ws_id}/current-state-version") and None

    def lock_unlock() -> None:
        api.lock(ws_id)
        api.unlock(ws_id)

    return lock_unlock


def concurrently(clients: int, per_client: int, make: Callable[[int], Callable[[], None]]) -> list[float]:
    """Run `per_client` calls on each of `clients` threads (started together); latencies in seconds."""
    latencies: list[float] = []
    lock = threading.Lock()
    actions = [make(i) for i in range(clients)]
    barrier = threading.Barrier(clients)

    errors: list[BaseException] = []

    def worker(action: Callable[[], None]) -> None:
        mine = []
        try:
            action()  # warm this client's connection
            barrier.wait(timeout=120)
            for _ in range(per_client):
                start = time.perf_counter()
                action()
                mine.append(time.perf_counter() - start)
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            barrier.abort()
            errors.append(exc)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(a,)) for a in actions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)} of {clients} clients failed") from errors[0]
    return latencies


def latency_levels(size: Size) -> dict[int, int]:
    """Concurrent clients -> calls per client (the smoke size still runs clients side by side)."""
    return size.pick(full={1: 30, 20: 5}, quick={1: 10, 20: 2}, smoke={1: 1, 2: 1})


def run(size: Size = Size.FULL) -> Outcome:
    from terrace.wiring.local_resources import local_clients

    outcome = Outcome("api_latency")
    levels = latency_levels(size)
    with local_stack(workers=False) as stack:
        endpoint, table = stack.local.settings.aws_endpoint_url, stack.local.settings.table_name
        setup = Api(stack)
        workspaces = [prepare_workspace(setup) for _ in range(max(levels))]
        recorder = Recorder(stack.local.container.table.inner._client)  # the DynamoDB table under the held reads
        recorded = {name: recorder.record(operation(setup, name, workspaces[0])) for name in OPERATIONS}
        outcome.details["dynamodb_calls_per_operation"] = {n: [c[0] for c in calls] for n, calls in recorded.items()}
        apis = [Api(stack) for _ in range(max(levels))]
        dynamos = [local_clients(endpoint)["dynamodb"] for _ in range(max(levels))]
        try:
            for name in OPERATIONS:
                for clients, per_client in levels.items():
                    api_lat = concurrently(clients, per_client, lambda i, n=name: operation(apis[i], n, workspaces[i]))
                    calls = recorded[name]
                    base_lat = concurrently(
                        clients, per_client, lambda i, c=calls: lambda: replay(dynamos[i], c, table)
                    )
                    _report(outcome, f"{name} x{clients}", api_lat, base_lat, len(calls))
        finally:
            for api in (*apis, setup):
                api.close()
    outcome.notes.append(
        "DynamoDB calls per operation: "
        + "; ".join(f"{n}: {', '.join(c)}" for n, c in outcome.details["dynamodb_calls_per_operation"].items())
    )
    return outcome


def _report(outcome: Outcome, label: str, api_lat: list[float], base_lat: list[float], calls: int) -> None:
    for p in (50, 99):
        outcome.row(
            f"{label} p{p}",
            percentile(api_lat, p),
            percentile(base_lat, p),
            note=f"baseline = {calls} bare DynamoDB calls",
        )
    outcome.details[label] = {
        "samples": len(api_lat),
        "api_ms": [round(v * 1000, 2) for v in api_lat],
        "baseline_ms": [round(v * 1000, 2) for v in base_lat],
    }
