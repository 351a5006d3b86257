"""The local AWS twin (`local/moto_twin.py`) under concurrent DynamoDB writes (found by the proof's 200-client
state load on `terrace dev --moto`): moto's DynamoDB backend alone fails transactions with "dictionary changed size
during iteration" (a 500) while other threads write, and a cancelled transaction's roll-back undoes other threads'
writes. Behind the twin's lock every write lands and every transaction is all-or-nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws import REGION, create_table_and_bucket
from botocore.config import Config
from terrace.adapters.dynamo_table import DynamoTable
from terrace.adapters.table import Check, ConditionFailed, Put
from terrace.local import moto_twin

THREADS = 8
WRITES = 40


@pytest.fixture(scope="module")
def twin() -> Iterator[str]:
    with moto_twin.running() as endpoint:
        yield endpoint


def _dynamodb(endpoint: str) -> Any:
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION)
    # no retries: a 500 from moto must surface, not be retried away
    config = Config(retries={"total_max_attempts": 1}, max_pool_connections=THREADS * 2)
    return session.client("dynamodb", endpoint_url=endpoint, config=config)


def test_concurrent_transactions_on_the_twin_lose_and_fail_nothing(twin: str) -> None:
    client = _dynamodb(twin)
    made = {"dynamodb": client, "s3": boto3.client("s3", endpoint_url=twin, region_name=REGION)}
    table = DynamoTable(client, create_table_and_bucket(made).table_name)
    for n in range(200):  # a table of some size: the deep copy of a transaction takes a while
        table.put({"pk": "filler", "sk": f"{n:04}", "version": 1, "pad": "x" * 200})
    failures: list[BaseException] = []

    def writer(thread: int) -> None:
        try:
            for n in range(WRITES):
                item = {"pk": f"t{thread}", "sk": f"{n:04}", "version": 1}
                if n % 2:  # a transaction that commits: the item and a check that holds
                    table.transact([Put(item, if_absent=True), Check("filler", "0000", if_version=1)])
                else:  # a plain write, then a transaction whose condition fails (it must roll back only itself)
                    table.put(item)
                    with pytest.raises(ConditionFailed):
                        table.transact([Put({**item, "sk": f"x{n:04}"}), Check("filler", "0000", if_version=9)])
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a writer did not finish"
    assert not failures, repr(failures[:3])
    for thread in range(THREADS):
        found = {item["sk"] for item in table.query(f"t{thread}")}
        assert found == {f"{n:04}" for n in range(WRITES)}, f"writer {thread} lost {WRITES - len(found)} writes"
