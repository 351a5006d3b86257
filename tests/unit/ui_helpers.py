"""Signing a TestClient in to the web UI as a browser does: the sign-in page first (its form carries the
login-CSRF token of its pre-session cookie), then the form's POST."""

from __future__ import annotations

import re

import httpx
from fastapi.testclient import TestClient


def sign_in_token(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "the sign-in page has no CSRF field"
    return match.group(1)


def sign_in(client: TestClient, token: str, next: str | None = None) -> httpx.Response:
    page = client.get("/app/sign-in")
    data = {"token": token, "csrf_token": sign_in_token(page.text)}
    if next is not None:
        data["next"] = next
    return client.post("/app/sign-in", data=data)
