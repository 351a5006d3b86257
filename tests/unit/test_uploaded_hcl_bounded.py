"""Uploaded HCL (a module's `.tf` files, a policy set's `policies.hcl`) is parsed by `adapters/process_hcl_reader.py`
in a child process of `tenant_process.py`, never in the server's process: within a budget of bytes per upload, and
of CPU and time (one 510 KiB file of `variable` blocks costs python-hcl2 about 10 s of CPU)."""

from __future__ import annotations

from typing import Any

import hcl2
import pytest
from run_helpers import RunEnv, make_run_env, tarball
from terrace.adapters.process_hcl_reader import ProcessHclReader
from terrace.services.registry.module_archive import read_module

MAIN_TF = 'variable "name" {\n  type = string\n}\nresource "null_resource" "this" {}\n'


def variables(count: int, prefix: str = "v") -> str:
    block = 'variable "%s%d" {\n  type        = string\n  description = "a variable"\n  default     = "x"\n}\n'
    return "".join(block % (prefix, i) for i in range(count))


def _upload(env: RunEnv, files: dict[str, str]) -> dict[str, Any]:
    body = {"data": {"type": "registry-modules", "attributes": {"name": "vpc", "provider": "aws"}}}
    assert env.api("POST", "/organizations/acme/registry-modules", body).status_code == 201
    body = {"data": {"type": "registry-module-versions", "attributes": {"version": "1.0.0"}}}
    created = env.api("POST", "/registry-modules/acme/vpc/aws/versions", body)
    assert created.status_code == 201, created.text
    module_id = created.json()["data"]["relationships"]["registry-module"]["data"]["id"]
    key = created.json()["data"]["links"]["upload"].split("memory://blobs/")[1].split("?")[0]
    env.land(key, tarball(files))
    [version] = env.container.module_versions.of_module(module_id)
    assert version.status == "ok"
    return env.container.module_versions.docs(version)


def test_a_modules_hcl_is_never_parsed_in_the_servers_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("python-hcl2 ran in the server's process")

    monkeypatch.setattr(hcl2, "loads", refuse)
    env = make_run_env()
    docs = _upload(env, {"main.tf": MAIN_TF, "variables.tf": variables(3)})
    assert [i["name"] for i in docs["inputs"]] == ["name", "v0", "v1", "v2"]
    assert docs["resources"] == [{"type": "null_resource", "name": "this"}]


def test_a_policy_sets_policies_hcl_is_read_in_the_child_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from terrace.services.policies.bundles import parse_policies_hcl

    monkeypatch.setattr(hcl2, "loads", lambda *_: pytest.fail("python-hcl2 ran in the server's process"))
    text = 'policy "a" {\n  query = "data.a.deny"\n  enforcement_level = "mandatory"\n}\n'
    [policy] = parse_policies_hcl(text, ProcessHclReader())
    assert (policy.name, policy.query, policy.enforcement_level) == ("a", "data.a.deny", "mandatory")


def test_the_bytes_of_hcl_read_per_upload_are_bounded() -> None:
    reader = ProcessHclReader(bytes_max=64 * 1024)
    files = {"a.tf": variables(10, "a"), "b.tf": variables(400, "b"), "c.tf": variables(10, "c")}  # b: 40 KiB
    parsed = reader.parse({**files, "d.tf": variables(400, "d")})
    assert sorted(parsed.documents) == ["a.tf", "b.tf", "c.tf"]
    assert parsed.errors["d.tf"] == "not read: the upload's HCL is read up to 65536 bytes"
    contents = read_module(tarball({"main.tf": MAIN_TF, **files, "d.tf": variables(400, "d")}), reader)
    names = {i["name"] for i in contents.inputs}
    assert {"name", "a0", "b399", "c9"} <= names and "d0" not in names


def test_the_cpu_spent_per_upload_is_bounded_and_what_was_read_is_kept() -> None:
    """A 510 KiB file of variables (about 10 s of CPU) after a small one: the child is stopped at its CPU limit, the
    small one is listed, the module is not refused."""
    heavy = variables(12000)[: 510 * 1024]
    heavy = heavy[: heavy.rfind("variable")]
    reader = ProcessHclReader(bytes_max=4 * 1024 * 1024, cpu_s=3, timeout_s=60)  # a cold first parse takes ~1.6 s
    parsed = reader.parse({"a.tf": MAIN_TF, "z.tf": heavy})
    assert sorted(parsed.documents) == ["a.tf"]
    assert parsed.stopped == "reading the upload's HCL used more CPU time than allowed"
    assert parsed.errors == {"z.tf": "not read: reading the upload's HCL used more CPU time than allowed"}
    contents = read_module(tarball({"a.tf": MAIN_TF, "z.tf": heavy}), reader)
    assert [i["name"] for i in contents.inputs] == ["name"]


def test_a_file_python_hcl2_cannot_read_has_its_message() -> None:
    parsed = ProcessHclReader().parse({"bad.tf": 'variable "x" {\n', "good.tf": MAIN_TF})
    assert sorted(parsed.documents) == ["good.tf"] and parsed.errors["bad.tf"] and parsed.stopped is None
