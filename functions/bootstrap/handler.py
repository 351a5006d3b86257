"""Custom resource "BootstrapAdmin": on stack create/update, makes sure the stack's secrets exist (SSM
SecureString parameters: the admin token, the URL-signing key, the data key sealing sensitive values), that the
site-admin user exists, and that the token stored in its parameter authenticates as that user and no older
bootstrap token does. Changing the `Rotation` property (`-c terrace:rotateSecrets=<anything new>`) replaces the
admin token and the URL-signing key (never the data key: every sealed value depends on it); a new
`SigningKeyGeneration` (a Terrace version's, `infra/secrets.py`) replaces the URL-signing key once. Idempotent; delete
keeps the user and the parameters (the table they belong to is retained too).

CloudFormation invokes this function directly, so it answers CloudFormation's presigned URL itself."""

from __future__ import annotations

import base64
import json
import os
import secrets
import urllib.request
from collections.abc import Collection
from typing import Any

from aws_lambda_powertools import Logger
from terrace.bootstrap import aws_container

logger = Logger()

_get_container = aws_container  # built once per execution environment
BOOTSTRAP_TOKEN = "bootstrap admin token"
ROTATED = ("token", "signing-key")  # kinds of parameter a new Rotation value replaces


def _ssm() -> Any:
    import boto3

    return boto3.client("ssm", endpoint_url=os.environ.get("TERRACE_AWS_ENDPOINT_URL") or None)


def new_value(kind: str) -> str:
    """A fresh secret: 48 URL-safe characters for tokens and signing keys, 32 random bytes (base64) for the data
    key."""
    if kind == "data-key":
        return base64.b64encode(secrets.token_bytes(32)).decode()
    return secrets.token_urlsafe(36)


def rotated_kinds(event: dict[str, Any]) -> tuple[str, ...]:
    """The kinds of parameter an update replaces: the token and the signing key for a new `Rotation`, the signing
    key for a new `SigningKeyGeneration` (a Terrace version that rotates it once on upgrade, `infra/secrets.py`)."""
    if event["RequestType"] != "Update":
        return ()
    old, new = event.get("OldResourceProperties") or {}, event["ResourceProperties"]
    if old.get("Rotation") != new.get("Rotation"):
        return ROTATED
    if old.get("SigningKeyGeneration") != new.get("SigningKeyGeneration"):
        return ("signing-key",)
    return ()


def ensure_parameters(ssm: Any, parameters: dict[str, str], rotate: Collection[str]) -> None:
    """Create each missing SecureString parameter (name -> kind); overwrite those of the kinds in `rotate`."""
    for name, kind in parameters.items():
        overwrite = kind in rotate
        try:
            ssm.put_parameter(
                Name=name,
                Value=new_value(kind),
                Type="SecureString",
                Overwrite=overwrite,
                Description=f"Terrace: {kind} (created by the stack's bootstrap)",
            )
            logger.info("secret parameter written", extra={"parameter": name, "rotated": overwrite})
        except ssm.exceptions.ParameterAlreadyExists:
            pass


def _read_secret(arn: str, container: Any) -> str:
    from terrace.adapters.secrets import fetch_secret

    return fetch_secret(arn, container.settings.region, container.settings.aws_endpoint_url, _ssm())


def ensure_admin(container: Any, username: str, token_secret: str) -> str:
    """The site admin's user id; creates the user and registers the token when missing, and revokes every other
    bootstrap token of the user (a replaced secret must not keep working)."""
    from terrace.domain.errors import Unauthenticated
    from terrace.domain.principal import PrincipalKind

    accounts = container.accounts
    user = accounts.find_user(username) or accounts.create_user(username, site_admin=True)
    current = None
    try:
        principal = accounts.authenticate(token_secret)
        if principal.kind is PrincipalKind.USER and principal.subject_id == user.id:
            current = principal.token_id
    except Unauthenticated:
        pass
    if current is None:
        issued = accounts.issue_token(PrincipalKind.USER, user.id, description=BOOTSTRAP_TOKEN, secret=token_secret)
        current = issued.token.id
    for token in accounts.list_tokens(user.id):
        if token.description == BOOTSTRAP_TOKEN and token.id != current:
            accounts.revoke_token(token.id)
            logger.info("old bootstrap token revoked", extra={"token_id": token.id})
    return str(user.id)


def stop_runner_tasks(ecs: Any, cluster: str) -> int:
    """Stop every task of the runners' cluster and wait until they have stopped (the cluster cannot be deleted
    while it runs tasks); the number stopped."""
    arns: list[str] = []
    for page in ecs.get_paginator("list_tasks").paginate(cluster=cluster):
        arns += page["taskArns"]
    for arn in arns:
        ecs.stop_task(cluster=cluster, task=arn, reason="Terrace stack deleted")
    for at in range(0, len(arns), 100):
        ecs.get_waiter("tasks_stopped").wait(
            cluster=cluster, tasks=arns[at : at + 100], WaiterConfig={"Delay": 6, "MaxAttempts": 40}
        )
    return len(arns)


def _teardown(event: dict[str, Any]) -> dict[str, str]:
    """Custom::TerraceRunnerTasks: nothing on create/update; on delete, stop the cluster's runner tasks."""
    if event["RequestType"] != "Delete":
        return {}
    import boto3

    ecs = boto3.client("ecs", endpoint_url=os.environ.get("TERRACE_AWS_ENDPOINT_URL") or None)
    stopped = stop_runner_tasks(ecs, event["ResourceProperties"]["Cluster"])
    logger.info("runner tasks stopped", extra={"stopped": stopped})
    return {"Stopped": str(stopped)}


def _respond(event: dict[str, Any], status: str, reason: str, physical_id: str, data: dict[str, str]) -> None:
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:500],
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": data,
        }
    ).encode()
    request = urllib.request.Request(
        event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))}
    )
    with urllib.request.urlopen(request, timeout=30):  # noqa: S310 - CloudFormation's presigned https URL
        pass


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: Any) -> None:
    properties = event.get("ResourceProperties", {})
    username = properties.get("Username", "admin")
    physical_id = event.get("PhysicalResourceId") or f"terrace-admin-{username}"
    try:
        data: dict[str, str] = {}
        if event.get("ResourceType") == "Custom::TerraceRunnerTasks":
            physical_id = event.get("PhysicalResourceId") or "terrace-runner-tasks"
            _respond(event, "SUCCESS", "ok", physical_id, _teardown(event))
            return
        if event["RequestType"] in ("Create", "Update"):
            if properties.get("Parameters"):
                ensure_parameters(_ssm(), properties["Parameters"], rotated_kinds(event))
            container = _get_container()
            user_id = ensure_admin(container, username, _read_secret(properties["SecretArn"], container))
            data = {"UserId": user_id}
            logger.info("site admin ready", extra={"username": username, "user_id": user_id})
        _respond(event, "SUCCESS", "ok", physical_id, data)
    except Exception as exc:  # CloudFormation must hear back, or the stack hangs for an hour
        logger.exception("bootstrap failed")
        _respond(event, "FAILED", f"{type(exc).__name__}: {exc}", physical_id, {})
