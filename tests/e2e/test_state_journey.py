"""State through Terraform 1.0.3: apply, state pull, terraform_remote_state, concurrent applies, the http backend.

The remote backend runs with execution mode `local`: terraform plans and applies here, and locks,
reads and writes state through the TFC API. The http backend reaches the same workspaces at
/state/v1/<org>/<workspace>, so both views share state and locks.
"""

from __future__ import annotations

import json
import ssl
import time
import uuid
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.e2e


def outputs(**values: Any) -> str:
    return "".join(f'output "{k}" {{\n  value = {json.dumps(v)}\n}}\n' for k, v in values.items())


# Holds the apply (and so the lock) until the test creates the gate file; gives up after 30 s.
GATED_RESOURCE = """
resource "null_resource" "gated" {
  provisioner "local-exec" {
    command = "for i in $(seq 300); do [ -f '%s' ] && exit 0; sleep 0.1; done; exit 1"
  }
}
"""


def pull(tf) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(tf.run("state", "pull").stdout)
    return state


def wait_for(predicate, timeout: float = 20, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_apply_outputs_then_state_pull_matches_the_api(stack, api, terraform, unique):
    name = unique("outputs")
    ws_id = api.create_workspace(name)["id"]
    tf = terraform(stack.remote_backend(name=name) + outputs(greeting="hello", answer=42))
    tf.init()

    assert "Apply complete!" in tf.apply().output

    state = pull(tf)
    assert state["outputs"]["greeting"]["value"] == "hello"
    assert state["outputs"]["answer"]["value"] == 42
    current = api.current_state_version(ws_id)["attributes"]
    assert current["serial"] == state["serial"]
    assert api.workspace(name)["attributes"]["locked"] is False  # terraform unlocked after writing

    tf.write(stack.remote_backend(name=name) + outputs(greeting="hello again", answer=43))
    tf.apply()
    again = pull(tf)
    assert again["serial"] > state["serial"] and again["lineage"] == state["lineage"]
    assert again["outputs"]["greeting"]["value"] == "hello again"
    assert api.current_state_version(ws_id)["attributes"]["serial"] == again["serial"]
    assert tf.run("output", "-raw", "greeting").output == "hello again"


def test_remote_state_reads_another_workspaces_outputs(stack, api, terraform, unique):
    producer = unique("producer")
    api.create_workspace(producer)
    tf_producer = terraform(stack.remote_backend(name=producer) + outputs(greeting="hello", answer=42), name="p")
    tf_producer.init()
    tf_producer.apply()

    consumer = unique("consumer")
    api.create_workspace(consumer)
    reader = f"""
data "terraform_remote_state" "producer" {{
  backend = "remote"
  config = {{
    hostname     = "{stack.hostname}"
    organization = "{stack.organization}"
    workspaces = {{
      name = "{producer}"
    }}
  }}
}}

locals {{
  produced = data.terraform_remote_state.producer.outputs
}}

output "echoed" {{
  value = "${{local.produced.greeting}} x${{local.produced.answer}}"
}}
"""
    tf_consumer = terraform(stack.remote_backend(name=consumer) + reader, name="c")
    tf_consumer.init()
    tf_consumer.apply()

    assert tf_consumer.run("output", "-raw", "echoed").output == "hello x42"
    assert pull(tf_consumer)["outputs"]["echoed"]["value"] == "hello x42"


def test_concurrent_applies_one_gets_the_lock_error(stack, api, terraform, unique, tmp_path):
    name = unique("race")
    api.create_workspace(name)
    gate = tmp_path / "gate"
    config = stack.remote_backend(name=name) + GATED_RESOURCE % gate + outputs(done="yes")
    first, second = terraform(config, name="first"), terraform(config, name="second")
    first.init()
    second.init()

    args = ("apply", "-auto-approve", "-input=false", "-no-color")
    running = first.start(*args)
    try:
        wait_for(lambda: api.workspace(name)["attributes"]["locked"], what="the first apply to take the lock")
        blocked = second.apply("-lock-timeout=0s", check=False)
    finally:
        gate.touch()
        winner = first.finish(running, args, check=False)

    assert blocked.code != 0
    assert "Error acquiring the state lock" in blocked.output
    assert winner.code == 0, winner
    assert "Apply complete! Resources: 1 added" in winner.stdout
    assert api.workspace(name)["attributes"]["locked"] is False
    assert pull(second)["outputs"]["done"]["value"] == "yes"  # the loser sees the winner's state


def test_force_unlock_after_an_api_lock_then_apply_succeeds(stack, api, terraform, unique):
    name = unique("unstick")
    ws_id = api.create_workspace(name)["id"]
    tf = terraform(stack.remote_backend(name=name) + outputs(ok=True))
    tf.init()
    api.lock(ws_id, "stuck")
    assert tf.apply("-lock-timeout=0s", check=False).code != 0

    tf.run("force-unlock", "-force", f"{stack.organization}/{name}")

    tf.apply()
    assert pull(tf)["outputs"]["ok"]["value"] is True


# the http backend ----------------------------------------------------------------------------
def http_client(stack) -> httpx.Client:
    return httpx.Client(
        verify=ssl.create_default_context(cafile=stack.ca_bundle), auth=("pytest", stack.token), timeout=30
    )


def lock_info(who: str) -> dict[str, str]:
    return {
        "ID": str(uuid.uuid4()),
        "Operation": "OperationTypeApply",
        "Info": "",
        "Who": who,
        "Version": "1.0.3",
        "Created": "2026-01-01T00:00:00Z",
        "Path": "",
    }


def test_http_backend_locks_and_shares_state_with_the_tfc_api(stack, api, terraform, unique):
    one, two = unique("http-one"), unique("http-two")
    tf_one = terraform(stack.http_backend(one) + outputs(which="one"), name="one")
    tf_two = terraform(stack.http_backend(two) + outputs(which="two"), name="two")
    tf_one.init()
    tf_two.init()

    with http_client(stack) as http:
        held = lock_info("someone@elsewhere")
        assert http.request("LOCK", stack.state_url(one), json=held).status_code == 200
        conflict = http.request("LOCK", stack.state_url(one), json=lock_info("me"))
        assert conflict.status_code in (409, 423) and conflict.json()["ID"] == held["ID"]

        refused = tf_one.apply("-lock-timeout=0s", check=False)
        assert refused.code != 0 and "Error acquiring the state lock" in refused.output
        assert held["ID"] in refused.output
        tf_two.apply()  # a lock on one workspace does not block another

        assert api.workspace(one)["attributes"]["locked"] is True  # the TFC API sees the http lock
        assert http.request("UNLOCK", stack.state_url(one), json=held).status_code == 200

    tf_one.apply()

    for name, tf, which in ((one, tf_one, "one"), (two, tf_two, "two")):
        state = pull(tf)
        assert state["outputs"]["which"]["value"] == which
        ws = api.workspace(name)
        assert ws["attributes"]["locked"] is False
        current = api.current_state_version(ws["id"])["attributes"]
        assert current["serial"] == state["serial"]
        downloaded = api.http.get(current["hosted-state-download-url"], follow_redirects=True)
        assert downloaded.status_code == 200
        assert json.loads(downloaded.content)["lineage"] == state["lineage"]


def test_http_backend_answers_a_large_state_with_a_redirect_terraform_follows(stack, api, terraform, unique):
    """A state above TERRACE_HTTP_STATE_REDIRECT_BYTES (1 MB) is not streamed through the API (a Lambda answer holds
    6 MB): the GET is a 307 to a presigned URL of the blob store, which terraform's http backend follows."""
    name = unique("http-large")
    big = 'output "big" {\n  value = format("%01200000d", 7)\n}\n'  # a 1.2 MB string of zeros and a 7
    tf = terraform(stack.http_backend(name) + big)
    tf.init()
    tf.apply()
    with http_client(stack) as http:
        answer = http.get(stack.state_url(name), follow_redirects=False)
        assert answer.status_code == 307, answer.text
        assert "/state/v1/" not in answer.headers["location"]
    state = pull(tf)  # through the redirect
    assert state["outputs"]["big"]["value"] == "0" * 1199999 + "7"
    assert api.current_state_version(api.workspace(name)["id"])["attributes"]["serial"] == state["serial"]
