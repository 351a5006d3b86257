"""A runner's proof of who it is on AWS, the pattern of Vault's AWS IAM auth: the runner signs (SigV4) an
`sts:GetCallerIdentity` request with its ECS task role's credentials and hands the request (method, URL, headers,
body) to the API, which checks here that it is exactly that call to the STS endpoint the API trusts, signed for
this server (`X-Terrace-Server-ID`, one of the signed headers: a request signed for another server is refused),
and recent; the API then sends it to that endpoint itself (never to a URL the caller chose) and STS answers whose
credentials signed it: `arn:aws:sts::<account>:assumed-role/<role name>/<session>`. An ECS task role's session is
named by the task's id, so the answer names the task.

Nothing here is secret: a captured proof is good for one enrollment of one task of this server, within minutes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qs

SERVER_ID_HEADER = "X-Terrace-Server-ID"
ACTION_BODY = "Action=GetCallerIdentity&Version=2011-06-15"
CONTENT_TYPE = "application/x-www-form-urlencoded; charset=utf-8"
# what the API forwards to STS (the Host header is the trusted endpoint's, set by the API's client)
FORWARDED = frozenset({"authorization", "content-type", "x-amz-date", "x-amz-security-token", "x-terrace-server-id"})
MUST_SIGN = frozenset({"host", "x-amz-date", "x-terrace-server-id"})
MAX_SKEW_S = 900  # STS itself refuses a signature older than 15 minutes

_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/(\d{8})/([a-z0-9-]+)/([a-z0-9-]+)/aws4_request")
_SIGNED = re.compile(r"SignedHeaders=([a-z0-9;-]+)")
_ASSUMED = re.compile(
    r"^arn:(aws|aws-cn|aws-us-gov):sts::(\d{12}):assumed-role/([\w+=,.@-]{1,64})/([\w+=,.@-]{2,64})\Z"
)
_ROLE = re.compile(r"^arn:(aws|aws-cn|aws-us-gov):iam::(\d{12}):role/(?:[\w+=,.@/-]*/)?([\w+=,.@-]{1,64})\Z")


class ProofRefused(Exception):
    """Why a proof is refused (for the server's log; the caller gets one answer for every refusal)."""


@dataclass(frozen=True)
class AssumedRole:
    account: str
    role: str  # the role's name (without its path)
    session: str


def assumed_role(arn: str) -> AssumedRole | None:
    """The assumed-role session an STS ARN names, or None when it names something else (a user, a federated one)."""
    found = _ASSUMED.match(arn)
    return AssumedRole(found.group(2), found.group(3), found.group(4)) if found else None


def role_name(role_arn: str) -> tuple[str, str] | None:
    """(account, role name) of an IAM role ARN (`arn:aws:iam::<account>:role/<path/><name>`), else None."""
    found = _ROLE.match(role_arn)
    return (found.group(2), found.group(3)) if found else None


def task_id(task_arn: str) -> str:
    """An ECS task's id: the last part of its ARN (`arn:aws:ecs:<region>:<account>:task/<cluster>/<id>`)."""
    return task_arn.rsplit("/", 1)[-1]


def vet(
    method: str,
    url: str,
    headers: dict[str, str],
    body: str,
    *,
    trusted_url: str,
    server_id: str,
    now: float,
) -> dict[str, str]:
    """The headers to send to `trusted_url` for a GetCallerIdentity proof; ProofRefused when it is anything else."""
    if method.upper() != "POST":
        raise ProofRefused(f"method {method!r}")
    if url != trusted_url:
        raise ProofRefused(f"a request to {url!r}, not to the trusted STS endpoint")
    try:
        form = parse_qs(body, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise ProofRefused("a body that is not a form") from None
    if form != {"Action": ["GetCallerIdentity"], "Version": ["2011-06-15"]}:
        raise ProofRefused(f"another action: {body[:100]!r}")
    lowered: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        if key in lowered:
            raise ProofRefused(f"header {name} twice")
        lowered[key] = value
    extra = set(lowered) - FORWARDED - {"host", "content-length"}
    if extra:
        raise ProofRefused(f"unexpected headers {sorted(extra)}")
    if lowered.get("x-terrace-server-id") != server_id:
        raise ProofRefused(f"signed for server {lowered.get('x-terrace-server-id')!r}")
    authorization = lowered.get("authorization", "")
    credential, signed = _CREDENTIAL.search(authorization), _SIGNED.search(authorization)
    if not authorization.startswith("AWS4-HMAC-SHA256 ") or credential is None or signed is None:
        raise ProofRefused("not a SigV4 signature")
    if credential.group(4) != "sts":
        raise ProofRefused(f"signed for the {credential.group(4)!r} service")
    unsigned = MUST_SIGN - set(signed.group(1).split(";"))
    if unsigned:
        raise ProofRefused(f"headers not signed: {sorted(unsigned)}")
    try:
        signed_at = datetime.strptime(lowered.get("x-amz-date", ""), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise ProofRefused("no X-Amz-Date") from None
    if abs(now - signed_at.timestamp()) > MAX_SKEW_S:
        raise ProofRefused(f"signed at {signed_at.isoformat()}")
    return {name: value for name, value in lowered.items() if name in FORWARDED}


def check_caller(arn: str, *, role_arn: str, task_arn: str) -> None:
    """STS named `arn` the signer: ProofRefused unless it is `role_arn`'s session of the task `task_arn`."""
    caller, expected = assumed_role(arn), role_name(role_arn)
    if caller is None or expected is None:
        raise ProofRefused(f"signed by {arn!r}, not by an assumed role")
    if (caller.account, caller.role) != expected:
        raise ProofRefused(f"signed by {arn!r}, not by the runner task role")
    if caller.session != task_id(task_arn):
        raise ProofRefused(f"signed by {arn!r}, a session of another task than {task_arn}")
