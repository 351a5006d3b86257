"""One event loop for a test's in-process clients. A TestClient used outside `with` starts a thread and an event
loop for each request, a third of a request's CPU; the helpers' clients (`served`) are instead served by one loop
each, as a server serves every request, stopped when the test ends (tests/unit/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastapi.testclient import TestClient


@contextmanager
def one_event_loop(client: TestClient) -> Iterator[BlockingPortal]:
    """`client`'s requests, and those of other clients given the portal (`other.portal = portal`), all served by one
    event loop in one thread until the block ends, as a server serves them: a TestClient used outside `with` starts
    a thread and an event loop for each request (a third of a request's CPU). No lifespan runs (as without `with`)."""
    with start_blocking_portal(**client.async_backend) as portal:
        client.portal = portal
        try:
            yield portal
        finally:
            client.portal = None


_TEST_LOOPS: list[ExitStack] | None = None  # a list while a test runs (tests/unit/conftest.py closes them after it)


@contextmanager
def loops_of_the_test() -> Iterator[None]:
    """While it is open, the clients given to `served` each get one event loop (`one_event_loop`) that the block's
    end stops; outside (a module's shared env) they start one per request, as a TestClient does."""
    global _TEST_LOOPS
    _TEST_LOOPS = []
    try:
        yield
    finally:
        opened, _TEST_LOOPS = _TEST_LOOPS, None
        for stack in reversed(opened):
            stack.close()


def served(client: TestClient) -> TestClient:
    """`client`, served by one event loop until the test ends when a test runs (`loops_of_the_test`); else as is."""
    if _TEST_LOOPS is not None:
        stack = ExitStack()
        _TEST_LOOPS.append(stack)
        stack.enter_context(one_event_loop(client))
    return client
