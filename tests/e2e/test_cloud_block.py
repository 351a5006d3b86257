"""The `cloud` block of current clients (Terraform 1.11, OpenTofu 1.9) against Terrace: init, remote plan,
apply confirmed on stdin and auto-approved, variables, outputs, state pull/push, workspaces by tags and
`terraform_remote_state` from another workspace.

Runs execute on the run stack's runners with Terraform 1.0.3 (the runner writes state in its own format); the
runner removes the `cloud` block, which 1.0.3 cannot parse, and puts its backend override in its place.
Each client skips with its reason when its binary is absent (TERRACE_TEST_TERRAFORM_CLOUD,
TERRACE_TEST_TOFU override the paths).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import client_env
from e2e_runs import current_state, runs, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]  # several remote runs per test
CLIENT_TIMEOUT_S = 300  # one client command, a remote run included (seconds on an idle machine, minutes when loaded)


@dataclass(frozen=True)
class Client:
    name: str
    binary: Path
    product: str  # how its messages name it

    def available(self) -> bool:
        return self.binary.exists()


TERRAFORM_111 = Client(
    "terraform-1.11", Path(os.environ.get("TERRACE_TEST_TERRAFORM_CLOUD", "/usr/local/bin/terraform")), "Terraform"
)
TOFU_19 = Client("tofu-1.9", Path(os.environ.get("TERRACE_TEST_TOFU", "/work/shared/tools/opentofu/tofu")), "OpenTofu")


def clients(*, repeats: tuple[Client, ...] = ()) -> list[Any]:
    """Both clients as test parameters; those in `repeats` are marked `client_repeat`: a path another client covers
    in `make test` (and that client is covered by other tests there), run again in `make e2e-clients`."""
    return [
        pytest.param(
            client,
            id=client.name,
            marks=[
                pytest.mark.skipif(not client.available(), reason=f"{client.name} is not installed at {client.binary}"),
                *([pytest.mark.client_repeat] if client in repeats else []),
            ],
        )
        for client in (TERRAFORM_111, TOFU_19)
    ]


CLIENTS = clients()  # both in `make test`: OpenTofu's remote apply and outputs (state, remote state: e2e-clients)
TOFU_REPEATS = clients(repeats=(TOFU_19,))  # OpenTofu's run in `make e2e-clients` only

# An explicit source: OpenTofu would otherwise look for hashicorp/null in its own registry, and the local
# stack's CLI configuration mirrors registry.terraform.io only (the tests run offline).
PROVIDERS = '  required_providers {\n    null = { source = "registry.terraform.io/hashicorp/null" }\n  }\n'
CONFIG = """
variable "greeting" {
  type    = string
  default = "default"
}

resource "null_resource" "a" {}

output "greeting" {
  value = var.greeting
}

output "a_id" {
  value = null_resource.a.id
}
"""


class Work:
    """A working directory of one client against the run stack."""

    def __init__(self, client: Client, path: Path, env: dict[str, str]) -> None:
        self.client, self.path, self.env = client, path, env

    def run(self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = CLIENT_TIMEOUT_S) -> str:
        env = {**self.env, "TF_INPUT": "1"} if stdin is not None else self.env
        done = subprocess.run(
            [str(self.client.binary), *args, "-no-color"],
            cwd=self.path,
            env=env,
            input=stdin or "",
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        output = done.stdout + done.stderr
        if check:
            assert done.returncode == 0, f"{self.client.name} {' '.join(args)} -> {done.returncode}\n{output}"
        elif done.returncode == 0:
            raise AssertionError(f"{self.client.name} {' '.join(args)} succeeded:\n{output}")
        return output

    def init(self) -> str:
        return self.run("init", "-input=false")


@pytest.fixture
def work(run_stack, tmp_path, tmp_path_factory):
    """work(client, workspaces_block, body, name=...) -> an initialized working directory with a `cloud` block."""

    def make(client: Client, workspaces: str, body: str = CONFIG, name: str = "work", init: bool = True) -> Work:
        path = tmp_path / name
        path.mkdir()
        (path / "main.tf").write_text(
            "terraform {\n" + PROVIDERS + "  cloud {\n"
            f'    hostname     = "{run_stack.hostname}"\n    organization = "{run_stack.organization}"\n'
            f"    workspaces {{\n      {workspaces}\n    }}\n  }}\n}}\n" + body
        )
        env = client_env(run_stack, tmp_path_factory.mktemp("home"))
        made = Work(client, path, env)
        if init:
            made.init()
        return made

    return make


def workspace(run_api: Any, name: str, client: Client | None = None, **attributes: Any) -> str:
    """A remote-execution workspace (created through the API: not pinned to the client's version) of `client`'s
    tool (its iac-platform: a run the other tool's CLI sends errors); its id."""
    tool = {"execution-mode": "remote", "iac-platform": tool_of(client)}
    return str(run_api.create_workspace(name, **{**tool, **attributes})["id"])


def tool_of(client: Client | None) -> str:
    """The workspace tool (`iac-platform`) a run of `client` needs."""
    return "opentofu" if client is not None and client.product == "OpenTofu" else "terraform"


def set_variable(run_api: Any, workspace_id: str, key: str, value: str) -> None:
    body = {"data": {"type": "vars", "attributes": {"key": key, "value": value, "category": "terraform"}}}
    run_api.request("POST", f"/api/v2/workspaces/{workspace_id}/vars", body, expect=201)


def outputs(work: Work) -> dict[str, Any]:
    return {name: o["value"] for name, o in json.loads(work.run("output", "-json")).items()}


# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("client", TOFU_REPEATS)
def test_remote_plan_is_speculative(client, run_api, work, unique):
    name = unique("cplan")
    ws_id = workspace(run_api, name, client)
    tf = work(client, f'name = "{name}"')

    output = tf.run("plan")

    assert "null_resource.a will be created" in output
    assert "Plan: 1 to add, 0 to change, 0 to destroy." in output
    (only,) = runs(run_api, ws_id)
    assert only["attributes"]["status"] == "planned_and_finished"
    assert only["attributes"]["plan-only"] is True
    assert only["attributes"]["source"] == "terraform+cloud"  # its Terraform-Version and X-Terraform-Integration
    assert run_api.workspace(name)["relationships"]["current-state-version"]["data"] is None
    link = re.search(r"https://\S+/app/\S+/runs/run-\w+", output)  # "To view this run in a browser, visit:"
    assert link, output
    shown = run_api.http.get(link.group(0), follow_redirects=False)
    assert shown.status_code == 307
    assert shown.headers["location"] == f"/app/{run_api.stack.organization}/workspaces/{name}/runs/{only['id']}"


@pytest.mark.parametrize("client", CLIENTS)
def test_apply_confirmed_on_stdin_with_a_cli_variable_then_outputs(client, run_api, work, unique):
    name = unique("cyes")
    ws_id = workspace(run_api, name, client)
    tf = work(client, f'name = "{name}"')

    output = tf.run("apply", "-var", "greeting=from the command line", stdin="yes\n")

    assert f'Do you want to perform these actions in workspace "{name}"?' in output
    assert "Apply complete! Resources: 1 added, 0 changed, 0 destroyed." in output
    (only,) = runs(run_api, ws_id)
    assert only["attributes"]["status"] == "applied"
    state = current_state(run_api, ws_id)
    assert state["resources"] == {"null_resource.a": 1}
    assert state["outputs"]["greeting"] == "from the command line"
    assert outputs(tf) == {"greeting": "from the command line", "a_id": state["outputs"]["a_id"]}


@pytest.mark.parametrize("client", TOFU_REPEATS)
def test_answering_no_discards_the_run(client, run_api, work, unique):
    name = unique("cno")
    ws_id = workspace(run_api, name, client)
    tf = work(client, f'name = "{name}"')

    output = tf.run("apply", stdin="no\n", check=False)

    assert "Apply discarded" in output
    (only,) = runs(run_api, ws_id)
    assert only["attributes"]["status"] == "discarded"
    assert run_api.workspace(name)["attributes"]["locked"] is False


@pytest.mark.parametrize("client", TOFU_REPEATS)
def test_auto_approve_uses_workspace_variables_and_cli_variables_win(client, run_api, work, unique):
    name = unique("cauto")
    ws_id = workspace(run_api, name, client)
    set_variable(run_api, ws_id, "greeting", "from the workspace")
    tf = work(client, f'name = "{name}"')

    tf.run("apply", "-auto-approve", "-input=false")
    assert outputs(tf)["greeting"] == "from the workspace"

    tf.run("apply", "-auto-approve", "-input=false", "-var", "greeting=from the command line")
    assert outputs(tf)["greeting"] == "from the command line"
    assert [r["attributes"]["status"] for r in runs(run_api, ws_id)] == ["applied", "applied"]


@pytest.mark.parametrize("client", TOFU_REPEATS)
def test_state_pull_and_push(client, run_api, work, unique, tmp_path):
    name = unique("cstate")
    ws_id = workspace(run_api, name, client)
    tf = work(client, f'name = "{name}"')
    tf.run("apply", "-auto-approve", "-input=false")
    applied = current_state(run_api, ws_id)

    pulled = json.loads(tf.run("state", "pull"))
    assert pulled["outputs"]["a_id"]["value"] == applied["outputs"]["a_id"]
    assert [r["name"] for r in pulled["resources"]] == ["a"]

    pulled["serial"] += 1
    pulled["outputs"]["greeting"]["value"] = "pushed"
    edited = tmp_path / "edited.tfstate"
    edited.write_text(json.dumps(pulled))
    tf.run("state", "push", str(edited))

    pushed = wait_for(
        lambda: (s := current_state(run_api, ws_id))["outputs"]["greeting"] == "pushed" and s,
        what="the pushed state to be current",
    )
    assert pushed["serial"] > applied["serial"]  # the pushed serial, or one more where the client bumps it
    assert json.loads(tf.run("state", "pull"))["outputs"]["greeting"]["value"] == "pushed"
    assert tf.run("state", "list").split() == ["null_resource.a"]


@pytest.mark.parametrize("client", TOFU_REPEATS)
def test_workspaces_selected_by_tags(client, run_api, work, unique):
    tag = unique("team")
    first, second = unique("ctag"), unique("ctag")
    run_api.create_workspace(unique("untagged"))  # never listed
    tf = work(client, f'tags = ["{tag}", "cloud"]', 'output "w" {\n  value = terraform.workspace\n}\n', init=False)

    # no workspace carries the tags yet: init asks for the name of one to create
    created = tf.run("init", stdin=f"{first}\n")
    assert "initialized" in created
    tf.run("workspace", "new", second)

    for name in (first, second):
        assert set(run_api.workspace(name)["attributes"]["tag-names"]) == {tag, "cloud"}
    listed = tf.run("workspace", "list").split()
    assert sorted(n for n in listed if n != "*") == sorted([first, second])
    tf.run("workspace", "select", first)
    assert tf.run("workspace", "show").strip() == first
    assert tf.run("workspace", "select", unique("missing"), check=False)


REMOTE_STATE = """
data "terraform_remote_state" "source" {
  backend = "remote"
  config = {
    hostname     = "{hostname}"
    organization = "{organization}"
    workspaces = {
      name = "{source}"
    }
  }
}

output "from_source" {
  value = data.terraform_remote_state.source.outputs.greeting
}
"""


@pytest.mark.parametrize("client", TOFU_REPEATS)
def test_terraform_remote_state_from_a_workspace_with_global_remote_state(client, run_stack, run_api, work, unique):
    source, consumer = unique("csource"), unique("cconsumer")
    workspace(run_api, source, client, **{"global-remote-state": True})
    workspace(run_api, consumer, client)
    work(client, f'name = "{source}"', name="source").run(
        "apply", "-auto-approve", "-input=false", "-var", "greeting=shared"
    )
    body = (
        REMOTE_STATE.replace("{hostname}", run_stack.hostname)
        .replace("{organization}", run_stack.organization)
        .replace("{source}", source)
    )
    reader = work(client, f'name = "{consumer}"', body, name="consumer")

    reader.run("apply", "-auto-approve", "-input=false")

    assert outputs(reader) == {"from_source": "shared"}


@pytest.mark.parametrize("client", TOFU_REPEATS)
def test_terraform_remote_state_is_refused_without_global_remote_state(client, run_stack, run_api, work, unique):
    source, consumer = unique("cprivate"), unique("cconsumer")
    workspace(run_api, source, client, **{"global-remote-state": False})
    workspace(run_api, consumer, client)
    work(client, f'name = "{source}"', name="source").run("apply", "-auto-approve", "-input=false")
    body = (
        REMOTE_STATE.replace("{hostname}", run_stack.hostname)
        .replace("{organization}", run_stack.organization)
        .replace("{source}", source)
    )
    reader = work(client, f'name = "{consumer}"', body, name="consumer")

    output = reader.run("plan", "-input=false", check=False)

    assert "error loading the remote state" in output
    assert "shared" not in output


@pytest.mark.parametrize("client", TOFU_REPEATS)
def test_terraform_remote_state_for_a_listed_remote_state_consumer(client, run_stack, run_api, work, unique):
    source, consumer = unique("cshared"), unique("cconsumer")
    source_id = workspace(run_api, source, client, **{"global-remote-state": False})
    consumer_id = workspace(run_api, consumer, client)
    run_api.request(
        "POST",
        f"/api/v2/workspaces/{source_id}/relationships/remote-state-consumers",
        {"data": [{"type": "workspaces", "id": consumer_id}]},
        expect=204,
    )
    work(client, f'name = "{source}"', name="source").run(
        "apply", "-auto-approve", "-input=false", "-var", "greeting=for consumers"
    )
    body = (
        REMOTE_STATE.replace("{hostname}", run_stack.hostname)
        .replace("{organization}", run_stack.organization)
        .replace("{source}", source)
    )
    reader = work(client, f'name = "{consumer}"', body, name="consumer")

    reader.run("apply", "-auto-approve", "-input=false")

    assert outputs(reader) == {"from_source": "for consumers"}


@pytest.mark.parametrize("client", TOFU_REPEATS)
def test_a_workspace_created_by_init_runs_remotely(client, run_api, work, unique):
    name = unique("cnew")
    tf = work(client, f'name = "{name}"')  # init creates the workspace
    ws_id = run_api.workspace(name)["id"]

    tf.run("apply", "-auto-approve", "-input=false")

    assert [r["attributes"]["status"] for r in runs(run_api, ws_id)] == ["applied"]
