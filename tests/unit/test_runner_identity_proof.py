"""A runner task's proof of its identity (`domain/runner_identity.py`, `runner/sigv4.py`): the runner's SigV4
signature is botocore's, byte for byte; the API accepts only a GetCallerIdentity to its trusted STS endpoint,
signed for it, recent, and only the runner role's session of the task."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotocoreCredentials
from terrace.domain.runner_identity import ACTION_BODY, ProofRefused, check_caller, vet
from terrace.runner.enrollment import identity_proof
from terrace.runner.sigv4 import Credentials, sign, task_role_credentials

STS = "https://sts.eu-west-1.amazonaws.com/"
SERVER = "https://terrace.example"
ROLE = "arn:aws:iam::123456789012:role/terrace/Runner-TaskRole"
TASK = "arn:aws:ecs:eu-west-1:123456789012:task/terrace/5f1e2d3c4b5a69788796a5b4c3d2e1f0"


@pytest.mark.parametrize("url", [STS, "http://127.0.0.1:5000/", "https://sts.amazonaws.com", "http://h:80/x?y=1"])
@pytest.mark.parametrize("token", ["session-token", None])
def test_the_signature_is_botocores(url: str, token: str | None) -> None:
    headers = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8", "X-Terrace-Server-ID": SERVER}
    theirs = AWSRequest(method="POST", url=url, data=ACTION_BODY, headers=dict(headers))
    SigV4Auth(BotocoreCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG", token), "sts", "eu-west-1").add_auth(theirs)
    when = datetime.strptime(theirs.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    ours = sign("POST", url, headers, ACTION_BODY, Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG", token),
                "eu-west-1", "sts", when)  # fmt: skip
    assert ours == dict(theirs.headers.items())


def test_the_task_role_credentials_come_from_the_ecs_credentials_endpoint() -> None:
    def endpoint(request: httpx.Request) -> httpx.Response:
        assert str(request.url) == "http://169.254.170.2/v2/credentials/abc"
        return httpx.Response(200, json={"AccessKeyId": "ASIA1", "SecretAccessKey": "s", "Token": "t"})

    env = {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/abc"}
    assert task_role_credentials(env, httpx.MockTransport(endpoint)) == Credentials("ASIA1", "s", "t")
    with pytest.raises(RuntimeError):
        task_role_credentials({})


def proof(now: datetime | None = None, server: str = SERVER) -> tuple[str, str, dict[str, str], str]:
    made = identity_proof(server, STS, "eu-west-1", Credentials("ASIA1", "secret", "token"), now)
    return made.method, made.url, dict(made.headers), made.body


def vetted(method: str, url: str, headers: dict[str, str], body: str, now: float | None = None) -> dict[str, str]:
    moment = datetime.now(UTC).timestamp() if now is None else now
    return vet(method, url, headers, body, trusted_url=STS, server_id=SERVER, now=moment)


def test_a_proof_is_forwarded_with_its_signed_headers_only() -> None:
    method, url, headers, body = proof()
    forwarded = vetted(method, url, headers, body)
    assert set(forwarded) == {"authorization", "content-type", "x-amz-date", "x-amz-security-token",
                              "x-terrace-server-id"}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda m, u, h, b: ("GET", u, h, b), "method"),
        (lambda m, u, h, b: (m, "http://169.254.169.254/latest/meta-data/", h, b), "not to the trusted STS endpoint"),
        (lambda m, u, h, b: (m, "https://sts.eu-west-1.amazonaws.com.evil.example/", h, b), "trusted STS endpoint"),
        (lambda m, u, h, b: (m, u, h, "Action=AssumeRole&Version=2011-06-15"), "another action"),
        (lambda m, u, h, b: (m, u, h, b + "&Action=GetCallerIdentity"), "another action"),
        (lambda m, u, h, b: (m, u, h, "%%%"), "not a form"),
        (lambda m, u, h, b: (m, u, {**h, "X-Terrace-Server-ID": "https://other.example"}, b), "signed for server"),
        (lambda m, u, h, b: (m, u, {**h, "x-terrace-server-id": SERVER}, b), "twice"),
        (lambda m, u, h, b: (m, u, {**h, "X-Amz-Target": "x"}, b), "unexpected headers"),
        (lambda m, u, h, b: (m, u, {**h, "Authorization": "Bearer x"}, b), "not a SigV4 signature"),
        (lambda m, u, h, b: (m, u, {**h, "Authorization": h["Authorization"].replace("/sts/", "/iam/")}, b), "service"),
        (lambda m, u, h, b: (m, u, {k: v for k, v in h.items() if k != "X-Amz-Date"}, b), "no X-Amz-Date"),
    ],
)
def test_anything_but_a_get_caller_identity_to_the_trusted_endpoint_for_this_server_is_refused(
    change: object, reason: str
) -> None:
    method, url, headers, body = change(*proof())  # type: ignore[operator]
    with pytest.raises(ProofRefused, match=reason):
        vetted(method, url, headers, body)


def test_an_old_proof_is_refused() -> None:
    method, url, headers, body = proof(now=datetime.now(UTC) - timedelta(minutes=16))
    with pytest.raises(ProofRefused, match="signed at"):
        vetted(method, url, headers, body)


def test_a_proof_for_another_server_is_refused_even_with_the_header_put_back() -> None:
    method, url, headers, body = proof(server="https://other.example")
    headers["X-Terrace-Server-ID"] = SERVER  # its signature no longer matches: STS refuses it
    assert vetted(method, url, headers, body)["x-terrace-server-id"] == SERVER  # form is fine: STS decides
    unsigned = {**headers, "Authorization": headers["Authorization"].replace(";x-terrace-server-id", "")}
    with pytest.raises(ProofRefused, match="not signed"):
        vetted(method, url, unsigned, body)


@pytest.mark.parametrize(
    ("arn", "reason"),
    [
        (
            "arn:aws:sts::123456789012:assumed-role/Other/5f1e2d3c4b5a69788796a5b4c3d2e1f0",
            "not by the runner task role",
        ),
        ("arn:aws:sts::210987654321:assumed-role/Runner-TaskRole/5f1e2d3c4b5a69788796a5b4c3d2e1f0", "runner task"),
        ("arn:aws:sts::123456789012:assumed-role/Runner-TaskRole/another-session", "another task"),
        ("arn:aws:iam::123456789012:user/Runner-TaskRole", "not by an assumed role"),
        ("arn:aws:sts::123456789012:federated-user/5f1e2d3c4b5a69788796a5b4c3d2e1f0", "not by an assumed role"),
    ],
)
def test_only_the_runner_roles_session_of_the_task_is_accepted(arn: str, reason: str) -> None:
    with pytest.raises(ProofRefused, match=reason):
        check_caller(arn, role_arn=ROLE, task_arn=TASK)
    check_caller(
        "arn:aws:sts::123456789012:assumed-role/Runner-TaskRole/5f1e2d3c4b5a69788796a5b4c3d2e1f0",
        role_arn=ROLE,
        task_arn=TASK,
    )
