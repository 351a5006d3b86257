"""Notifications on the AWS wiring (DynamoDB, SQS, SES on moto): a run's transition reaches the events queue, the
worker publishes a delivery event on SQS, a failed delivery comes back on SQS and succeeds, each attempt is kept on
the configuration in DynamoDB, and an e-mail configuration's verification goes through SES."""

from __future__ import annotations

import json
import uuid

import boto3
import requests
from aws import config_archive
from fastapi.testclient import TestClient
from terrace.adapters.memory_outbound import MemoryOutbound
from terrace.adapters.outbound import OutboundResponse
from terrace.bootstrap import build_aws
from terrace.config import Settings
from terrace.domain.principal import Principal, PrincipalKind
from terrace.web.app import create_app
from terrace.wiring.local_resources import create_resources
from test_state_landed_on_moto import _work_the_queue


def test_a_run_notifies_through_sqs_with_a_retry_and_mail_goes_through_ses(endpoint: str) -> None:
    resources = create_resources(endpoint, f"n{uuid.uuid4().hex[:8]}")
    settings = Settings(
        **resources.settings_fields(),
        aws_endpoint_url=endpoint,
        url_signing_secret="s",
        public_url="https://t.test",
        notification_retry_base_s=0,
        mail_from="terrace@example.com",
    )
    container = build_aws(settings)
    answers = iter([OutboundResponse(200), OutboundResponse(502, "bad gateway"), OutboundResponse(200)])
    container.outbound = MemoryOutbound(answer=lambda url, body: next(answers))
    _work_the_queue(container)
    user = container.accounts.create_user("alice", "alice@example.com")
    principal = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(principal, "acme", "ops@example.com")
    ws = container.workspaces.create(principal, "acme", {"name": "prod", "execution-mode": "remote"})
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    client = TestClient(create_app(container))
    attributes = {"name": "hook", "destination-type": "generic", "enabled": True, "url": "https://hooks.example/x",
                  "token": "k", "triggers": ["run:created"]}  # fmt: skip
    doc = {"data": {"type": "notification-configurations", "attributes": attributes}}
    nc = client.post(f"/api/v2/workspaces/{ws.id}/notification-configurations", headers=headers, json=doc)
    assert nc.status_code == 201, nc.text
    nc_id = nc.json()["data"]["id"]
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
    cv = client.post(f"/api/v2/workspaces/{ws.id}/configuration-versions", headers=headers, json=body).json()["data"]
    assert requests.put(cv["attributes"]["upload-url"], data=config_archive(), timeout=10).status_code == 200
    _work_the_queue(container)
    rel = {"workspace": {"data": {"type": "workspaces", "id": ws.id}},
           "configuration-version": {"data": {"type": "configuration-versions", "id": cv["id"]}}}  # fmt: skip
    run = client.post("/api/v2/runs", headers=headers, json={"data": {"type": "runs", "relationships": rel}})
    assert run.status_code == 201, run.text

    for _ in range(5):  # the transition, the first delivery, its retry
        _work_the_queue(container)
    sent = container.outbound.sent
    assert len(sent) == 3 and sent[1].body == sent[2].body
    assert json.loads(sent[2].body)["run_id"] == run.json()["data"]["id"]
    read = client.get(f"/api/v2/notification-configurations/{nc_id}", headers=headers).json()["data"]
    assert [r["code"] for r in read["attributes"]["delivery-responses"]] == [200, 502, 200]

    attributes = {"name": "mail", "destination-type": "email", "enabled": True, "email-addresses": ["ops@example.com"]}
    doc = {"data": {"type": "notification-configurations", "attributes": attributes}}
    ses = boto3.client("ses", endpoint_url=endpoint, region_name=settings.region)
    ses.verify_email_identity(EmailAddress="terrace@example.com")
    before = int(ses.get_send_quota()["SentLast24Hours"])
    mailed = client.post(f"/api/v2/workspaces/{ws.id}/notification-configurations", headers=headers, json=doc)
    assert mailed.status_code == 201, mailed.text
    assert mailed.json()["data"]["attributes"]["delivery-responses"][0]["successful"] is True
    assert int(ses.get_send_quota()["SentLast24Hours"]) == before + 1
