"""A child for `test_tenant_process.py` that reads its request late (as a busy one does): answers its length."""

from __future__ import annotations

import sys
import time

from terrace.adapters import tenant_process

if __name__ == "__main__":
    tenant_process.enter()
    time.sleep(0.2)  # the parent has filled the pipe's buffer by now, and must go on writing
    sys.stdout.write(str(len(sys.stdin.buffer.read())))
