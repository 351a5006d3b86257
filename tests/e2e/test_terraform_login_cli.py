"""`terraform login` and `tofu login` (Terraform 1.0.3 and OpenTofu 1.9.4, the real CLIs) driven to completion
against the running stack: the CLI prints the approval URL, a signed-in browser session approves it, the CLI's
own listener receives the code and the CLI trades it for a token that it saves and that works."""

from __future__ import annotations

import contextlib
import json
import re
import ssl
import subprocess
import threading
from pathlib import Path

import httpx
import pytest
from conftest import TERRAFORM, StackInfo

URL = re.compile(r"(https://\S+/app/oauth/authorize\?\S+)")
TOFU = Path(__file__).resolve().parents[3] / "shared" / "tools" / "opentofu" / "tofu"  # ../shared beside the clone
TERRAFORM_NEW = Path("/usr/local/bin/terraform")  # a current terraform some machines carry (1.11 here)
CLIENTS = {
    "terraform-1.0.3": (TERRAFORM, ".terraform.d"),
    "terraform-on-path": (TERRAFORM_NEW, ".terraform.d"),
    "tofu-1.9.4": (TOFU, ".terraform.d"),
}


@pytest.mark.parametrize("client", list(CLIENTS))
def test_cli_login_obtains_and_saves_a_working_token(stack: StackInfo, tmp_path: Path, client: str) -> None:
    binary, config_dir = CLIENTS[client]
    if not binary.exists():
        pytest.skip(f"{client} is not installed at {binary}")
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / config_dir).mkdir()  # terraform 1.0.3 writes its credentials file there but does not create it
    env = {  # no CLI config with credentials (login refuses to replace those) and no browser to launch
        "HOME": str(home),
        "PATH": str(home / "bin"),
        "SSL_CERT_FILE": stack.ca_bundle,
        "CHECKPOINT_DISABLE": "1",
    }
    cli = subprocess.Popen(
        [str(binary), "login", "-no-color", stack.hostname],
        env=env,
        cwd=tmp_path,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    watchdog = threading.Timer(120, cli.kill)  # a stuck CLI fails the test instead of hanging it
    watchdog.start()
    try:
        assert cli.stdin is not None and cli.stdout is not None
        cli.stdin.write("yes\n")
        cli.stdin.flush()
        said: list[str] = []
        url = None
        for line in cli.stdout:
            said.append(line)
            if match := URL.search(line):
                url = match.group(1)
                break
        assert url, "terraform login printed no approval URL:\n" + "".join(said)

        tls = ssl.create_default_context(cafile=stack.ca_bundle)
        with httpx.Client(base_url=stack.url, verify=tls, follow_redirects=False, timeout=30) as browser:
            form = re.search(r'name="csrf_token" value="([^"]+)"', browser.get("/app/sign-in").text)
            assert form, "the sign-in page has no CSRF field"
            signed_in = browser.post("/app/sign-in", data={"token": stack.token, "csrf_token": form.group(1)})
            assert signed_in.status_code == 303
            page = browser.get(url)
            assert page.status_code == 200, page.text
            fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
            approved = browser.post("/app/oauth/authorize", data={**fields, "decision": "approve"})
            assert approved.status_code == 303
            callback = approved.headers["location"]
            assert callback.startswith("http://localhost:")
        # the browser follows the redirect to the CLI's listener (on 127.0.0.1: `localhost` may resolve to ::1 first).
        # Terraform 1.0.3 closes its listener as soon as it has the code, sometimes before its answer is written:
        # a dropped connection there is the CLI's, and what counts is that the CLI goes on to finish the login.
        with contextlib.suppress(httpx.RemoteProtocolError, httpx.ReadError):
            httpx.get(callback.replace("http://localhost:", "http://127.0.0.1:", 1), timeout=30)

        rest, _ = cli.communicate(timeout=120)
        output = "".join(said) + rest
        assert cli.returncode == 0, output
        assert "Success!" in output
    finally:
        watchdog.cancel()
        if cli.poll() is None:
            cli.kill()
            cli.communicate()

    saved = json.loads((home / config_dir / "credentials.tfrc.json").read_text())
    token = saved["credentials"][stack.hostname]["token"]
    assert token != stack.token
    me = httpx.get(
        f"{stack.url}/api/v2/account/details",
        headers={"Authorization": f"Bearer {token}"},
        verify=ssl.create_default_context(cafile=stack.ca_bundle),
    )
    assert me.status_code == 200 and me.json()["data"]["attributes"]["username"]
