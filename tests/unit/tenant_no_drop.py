"""A child for `test_tenant_uids.py` that never calls `tenant_process.enter` (so never drops to its uid): it
echoes its request, which it must never be given."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    sys.stdout.write(sys.stdin.read())
