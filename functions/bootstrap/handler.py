"""Custom resource "BootstrapAdmin": on stack create/update, makes sure the site-admin user exists and that
the token stored in the bootstrap secret authenticates as that user. Idempotent; delete keeps the user.

CloudFormation invokes this function directly, so it answers CloudFormation's presigned URL itself."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from aws_lambda_powertools import Logger
from terrace.bootstrap import aws_container

logger = Logger()

_get_container = aws_container  # built once per execution environment


def _read_secret(arn: str, container: Any) -> str:
    from terrace.adapters.secrets import fetch_secret

    return fetch_secret(arn, container.settings.region, container.settings.aws_endpoint_url)


def ensure_admin(container: Any, username: str, token_secret: str) -> str:
    """The site admin's user id; creates the user and registers the token when missing."""
    from terrace.domain.errors import Unauthenticated
    from terrace.domain.principal import PrincipalKind

    accounts = container.accounts
    user = accounts.find_user(username) or accounts.create_user(username, site_admin=True)
    try:
        principal = accounts.authenticate(token_secret)
        if principal.kind is PrincipalKind.USER and principal.subject_id == user.id:
            return str(user.id)
    except Unauthenticated:
        pass
    accounts.issue_token(PrincipalKind.USER, user.id, description="bootstrap admin token", secret=token_secret)
    return str(user.id)


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
        if event["RequestType"] in ("Create", "Update"):
            container = _get_container()
            user_id = ensure_admin(container, username, _read_secret(properties["SecretArn"], container))
            data = {"UserId": user_id}
            logger.info("site admin ready", extra={"username": username, "user_id": user_id})
        _respond(event, "SUCCESS", "ok", physical_id, data)
    except Exception as exc:  # CloudFormation must hear back, or the stack hangs for an hour
        logger.exception("bootstrap failed")
        _respond(event, "FAILED", f"{type(exc).__name__}: {exc}", physical_id, {})
