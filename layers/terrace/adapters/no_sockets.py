"""A tenant child that evaluates (a policy's Rego, an uploaded module's HCL) needs no network: `install` gives the
calling process a seccomp filter under which `socket`, `socketpair` and `io_uring_setup` fail with EPERM (and any
other architecture's system calls kill it), so a hole in the engine reaches neither the instance metadata, the
ECS credentials endpoint, the server's own API nor anything else. Set in `tenant_process.enter` after the uid
drop, before the request is read; inherited by whatever the child starts, never lifted (no_new_privs is set first,
which an unprivileged process needs to install a filter). The parent checks /proc's `Seccomp` field before it hands
over a request (`tenant_identity.dropped`). A git clone needs the network: it runs without this filter.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_LD_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
_ALLOW, _ERRNO, _KILL = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x80000000
_X32 = 0x40000000  # x86_64's x32 system calls carry this bit
# AUDIT_ARCH_* and the numbers of socket, socketpair and io_uring_setup
_ARCHES = {"x86_64": (0xC000003E, (41, 53, 425)), "aarch64": (0xC00000B7, (198, 199, 425))}


def program(arch: int, denied: tuple[int, ...]) -> list[tuple[int, int, int, int]]:
    """The filter, as (code, jt, jf, k) instructions over `struct seccomp_data` (nr at 0, arch at 4)."""
    count = len(denied)
    errno_at, kill_at = 5 + count, 6 + count  # instruction indexes of the two refusals (after the allow)
    filt = [(_LD_ABS, 0, 0, 4), (_JEQ, 0, kill_at - 2, arch), (_LD_ABS, 0, 0, 0), (_JGE, errno_at - 4, 0, _X32)]
    filt += [(_JEQ, errno_at - (5 + i), 0, nr) for i, nr in enumerate(denied)]
    return [*filt, (_RET, 0, 0, _ALLOW), (_RET, 0, 0, _ERRNO), (_RET, 0, 0, _KILL)]


def install() -> None:
    """The filter on this process (single-threaded: a filter installed by prctl covers the calling thread and what
    it starts). OSError when the kernel refuses it or the machine is not one of `_ARCHES`."""
    known = _ARCHES.get(platform.machine())
    if known is None:
        raise OSError(errno.ENOSYS, f"no socket filter for {platform.machine()}")
    raw = b"".join(struct.pack("HBBI", *instruction) for instruction in program(*known))
    buffer = ctypes.create_string_buffer(raw, len(raw))
    prog = struct.pack("HxxxxxxP", len(raw) // 8, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    zero = ctypes.c_ulong(0)
    for option, second, third in (
        (_PR_SET_NO_NEW_PRIVS, 1, zero),
        (_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.c_char_p(prog)),
    ):
        if libc.prctl(option, ctypes.c_ulong(second), third, zero, zero) != 0:
            raise OSError(ctypes.get_errno(), f"prctl({option})")
