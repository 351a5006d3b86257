"""Crafted tarballs for the archive readers' bounds: an extension header (GNU long name or link, PAX) announcing
hundreds of MB, sparse members, chains of headers, a gzip bomb; and legitimate archives with long names.

A bomb is a gzip stream of several members (gzip reads them as one stream): the header, then the payload as the
same compressed MiB of zeros repeated, then a small module; 400 MiB announced and present is ~400 KB compressed.
"""

from __future__ import annotations

import gzip
import io
import tarfile

MIB = 1024 * 1024
ANNOUNCED = 400 * MIB
_ZEROS = gzip.compress(bytes(MIB), 9)
MAIN_TF = b'output "x" { value = 1 }\n'


def header(name: str, kind: bytes, size: int, **fields: object) -> bytes:
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, size
    for key, value in fields.items():
        setattr(info, key, value)
    return info.tobuf(tarfile.USTAR_FORMAT, "utf-8", "surrogateescape")


def regular(name: str, data: bytes) -> bytes:
    """A plain member (a short name) with its data padded to the block."""
    return header(name, tarfile.REGTYPE, len(data)) + data + bytes(-len(data) % 512)


def bomb(kind: bytes, announced: int = ANNOUNCED, present: int | None = None, then: bytes | None = None) -> bytes:
    """A .tar.gz whose first member is a `kind` header announcing `announced` bytes, `present` of them (all by
    default, in whole MiB) in the stream, then `then` (a small module by default) and the archive's end."""
    present = announced if present is None else present
    parts = [gzip.compress(header("././@LongLink", kind, announced), 1)]
    parts += [_ZEROS] * (present // MIB)
    rest = then if then is not None else regular("main.tf", MAIN_TF)
    parts.append(gzip.compress(rest + bytes(1024), 1))
    return b"".join(parts)


def plain_gz(body: bytes) -> bytes:
    return gzip.compress(body + bytes(1024), 1)


def long_names(fmt: int, length: int = 200) -> tuple[bytes, str]:
    """A legitimate module whose one nested file has a `length`-character path, written in `fmt` (GNU or PAX)."""
    name = "d" * 120 + "/" + "f" * (length - 124) + ".tf"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=fmt) as tar:
        for member, data in (("main.tf", MAIN_TF), (name, MAIN_TF)):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue(), name
