"""A child for `test_tenant_process.py`, started by `adapters/tenant_process.py`: answers what it was given (its
environment before and after `enter`, uids, descriptors, session, limits, folder), or which files it can open, or,
asked to, misbehaves."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import time

from terrace.adapters import tenant_process


def main() -> None:
    inherited = dict(os.environ)
    tenant_process.enter()
    request = json.loads(sys.stdin.buffer.read())
    if request.get("do") == "spawn":  # a grandchild that outlives it, unless its group is killed
        grandchild = subprocess.Popen(["/bin/sleep", "600"])  # noqa: S603 - (the interpreter may be out of its reach)
        print(json.dumps({"grandchild": grandchild.pid}), flush=True)
        os._exit(0)
    if request.get("do") == "spin":
        print(json.dumps({"spinning": True}), flush=True)
        while True:
            pass
    if request.get("do") == "sleep":
        print(json.dumps({"sleeping": True}), flush=True)
        time.sleep(600)
    if request.get("do") == "grow":
        hoard = [bytearray(1024 * 1024) for _ in range(4096)]
        print(len(hoard))
    if request.get("do") == "socket":  # what the child's network is: the errno of each kind of socket
        refused = {}
        for name, family in (("inet", socket.AF_INET), ("inet6", socket.AF_INET6), ("unix", socket.AF_UNIX)):
            try:
                socket.socket(family, socket.SOCK_STREAM).close()
                refused[name] = 0
            except OSError as exc:
                refused[name] = exc.errno
        sys.stdout.write(json.dumps({"refused": refused}))
        return
    if "open" in request:  # what the child's uid may read of the server's files
        errors = {}
        for path in request["open"]:
            try:
                with open(path, "rb") as opened:
                    opened.read(1)
                errors[path] = 0
            except OSError as exc:
                errors[path] = exc.errno
        sys.stdout.write(json.dumps({"errors": errors}))
        return
    answer = {
        "uid": os.getresuid(),
        "gid": os.getresgid(),
        "groups": os.getgroups(),
        "inherited": inherited,
        "environ": dict(os.environ),
        "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
        "sid": os.getsid(0),
        "pgid": os.getpgid(0),
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "cpu": resource.getrlimit(resource.RLIMIT_CPU),
        "core": resource.getrlimit(resource.RLIMIT_CORE),
    }
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
