"""Which unexpected exceptions are the storage failing under a request, and what the client is told then.

The adapters let their stores' own errors through (a `sqlite3.OperationalError`, an `OSError` from the blob folder,
botocore's `ClientError` from DynamoDB or S3 once boto3's own retries are spent): each write is conditional and
all-or-nothing, so a retry of the request redoes or finds what the failed one did. The web layer
answers them with a JSON:API error a client retries (Terraform's http backend and go-tfe retry 5xx), not a 500:
507 when the disk under the embedded server is full, 503 with `Retry-After` for any other storage failure.
A helper, not a port: `web/errors.py` is its one caller.
"""

from __future__ import annotations

import errno
import sys
from dataclasses import dataclass

SQLITE_FULL = 13  # sqlite3's "database or disk is full"
DISK_FULL = {errno.ENOSPC, errno.EDQUOT}
DEVICE_ERRORS = {errno.EIO, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.ENOMEM}
AWS_THROTTLED = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "SlowDown",
    "ServiceUnavailable",
    "InternalServerError",
    "InternalError",
    "TransactionInProgressException",
}


@dataclass(frozen=True)
class StorageFailure:
    status: int  # 507 (disk full) or 503
    title: str
    detail: str


FULL = StorageFailure(
    507, "insufficient storage", "the server's storage is full; the request did not complete, retry once space is freed"
)
UNAVAILABLE = StorageFailure(
    503,
    "storage unavailable",
    "the server's storage failed during this request; it may not have completed, retry shortly",
)


def storage_failure(exc: BaseException) -> StorageFailure | None:
    """`exc` as a storage failure, or None when it is something else (a bug: a 500)."""
    sqlite3 = sys.modules.get("sqlite3")  # loaded only where the embedded server's adapters are (not on Lambda)
    if sqlite3 is not None and isinstance(exc, sqlite3.Error):
        if getattr(exc, "sqlite_errorcode", None) == SQLITE_FULL or "disk is full" in str(exc):
            return FULL
        return UNAVAILABLE if isinstance(exc, sqlite3.OperationalError) else None
    if isinstance(exc, OSError) and exc.errno in DEVICE_ERRORS:
        return FULL if exc.errno in DISK_FULL else UNAVAILABLE
    botocore = sys.modules.get("botocore.exceptions")  # loaded only where the AWS adapters are
    if botocore is not None:
        if isinstance(exc, botocore.ClientError):
            error = exc.response.get("Error", {})
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            return UNAVAILABLE if status >= 500 or error.get("Code") in AWS_THROTTLED else None
        if isinstance(exc, (botocore.ConnectionError, botocore.HTTPClientError, botocore.ReadTimeoutError)):
            return UNAVAILABLE
    return None
