"""Shared by every test folder. Keep it tiny: folder-specific fixtures live in each folder's conftest."""

from __future__ import annotations

import os
import socket

import pytest

# boto3 needs credentials even against moto; tests never use real ones.
for _key, _value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}.items():
    os.environ[_key] = _value


@pytest.fixture
def free_port() -> int:
    """A TCP port nobody listens on right now (for servers that cannot be handed a socket)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
