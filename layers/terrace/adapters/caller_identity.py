"""The caller identity port: sends a vetted `sts:GetCallerIdentity` request (`domain/runner_identity.py`) to the
STS endpoint the server trusts and answers the ARN of whoever signed it. Implementation: `sts_caller_identity.py`
(AWS; the moto server in tests). The embedded server has none: its runners are local processes with a code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class CallerIdentity(Protocol):
    url: str  # the trusted endpoint: the only URL a proof may name, the only one this sends to

    def caller_arn(self, headers: Mapping[str, str], body: str) -> str | None:
        """The signer's ARN as STS answers it; None when STS refuses the signature (or cannot be reached)."""
        ...
