"""A served app for browser tests that walk many pages: one in-memory app served for a whole test file, its
owner alice (of every organization named), an API client, a scripted runner per organization and the events
worker's part done on demand (`Site.drain`)."""

from __future__ import annotations

import io
import json
import socket
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
import pytest
from terrace.adapters.memory_forge import MemoryForge
from terrace.adapters.memory_outbound import MemoryOutbound
from terrace.bootstrap import Container, build_memory
from terrace.config import Settings
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.runs import run_id_of
from terrace.services.events import landed_event
from terrace.web.ui.session import COOKIE

from .conftest import serve_app

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect


@dataclass
class Site:
    base: str
    token: str  # alice's, owner of every organization
    owner: Principal
    container: Container
    api: httpx.Client
    runners: dict[str, httpx.Client] = field(default_factory=dict)

    def workspace(self, org: str, name: str, **attributes: Any) -> str:
        body = {"data": {"type": "workspaces", "attributes": {"name": name, "execution-mode": "remote", **attributes}}}
        created = self.api.post(f"/api/v2/organizations/{org}/workspaces", json=body)
        assert created.status_code == 201, created.text
        return str(created.json()["data"]["id"])

    def land(self, key: str, data: bytes) -> None:
        self.container.blobs.put(key, data)
        self.container.events.handle(landed_event(key))

    def upload_config(self, ws_id: str) -> None:
        body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
        created = self.api.post(f"/api/v2/workspaces/{ws_id}/configuration-versions", json=body)
        assert created.status_code == 201, created.text
        self.land(blob_key(created.json()["data"]["attributes"]["upload-url"]), tarball({"main.tf": "output x {}\n"}))

    def run(self, ws_id: str, **attributes: Any) -> str:
        body = {"data": {"type": "runs", "attributes": {"message": "from the CLI", **attributes},
                         "relationships": {"workspace": {"data": {"type": "workspaces", "id": ws_id}}}}}  # fmt: skip
        created = self.api.post("/api/v2/runs", json=body)
        assert created.status_code == 201, created.text
        return str(created.json()["data"]["id"])

    def work(self, org: str, plan: dict[str, Any] | None = None, **finish: Any) -> dict[str, Any]:
        """The organization's next job, claimed and finished by a runner (its JSON plan `plan`); events handled."""
        if org not in self.runners:
            token = self.container.runner_credentials.runner_token(org)
            self.runners[org] = httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {token}"})
        runner = self.runners[org]
        spec = dict(runner.post("/api/runner/jobs/next", json={"runner_id": "r1"}).json())
        if plan is not None:
            key = self.container.run_store.load(run_id_of(spec["job_id"])).plan.json_key
            assert key, spec
            self.container.blobs.put(key, json.dumps(plan).encode())
        body = {"runner_id": "r1", "status": "finished", "has_changes": True, **finish}
        done = runner.post(f"/api/runner/jobs/{spec['job_id']}/finish", json=body)
        assert done.status_code == 200, done.text
        self.drain()
        return spec

    def drain(self) -> None:
        """The events worker's part: handle what was published (policy evaluations, notifications, indexing)."""
        published = self.container.publisher.events  # type: ignore[attr-defined]
        while published:
            self.container.events.handle(published.pop(0))

    def sign_in(self, page: Any, token: str | None = None) -> None:
        """A web session of `token` (alice's) in the page's context, as signing in makes one (the sign-in form has
        its own tests)."""
        cookie, _ = self.container.web_sessions.sign_in(token or self.token)
        page.context.add_cookies([{"name": COOKIE, "value": cookie, "domain": "localhost", "path": "/app",
                                   "httpOnly": True, "secure": True, "sameSite": "Lax"}])  # fmt: skip


def blob_key(url: str) -> str:
    return url.split("memory://blobs/")[1].split("?")[0]


def tarball(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return buffer.getvalue()


@contextmanager
def serve_site(orgs: tuple[str, ...]) -> Iterator[Site]:
    """The app, served until the block ends, with alice owning each of `orgs`."""
    container = build_memory(Settings(table_name="memory", blob_bucket="memory", url_signing_secret="test-secret"))
    alice = container.accounts.create_user("alice", "alice@example.com")
    owner = Principal(PrincipalKind.USER, alice.id, alice.username)
    for org in orgs:
        container.organizations.create(owner, org, "ops@example.com")
    token = container.accounts.issue_token(PrincipalKind.USER, alice.id, description="laptop").secret
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    with serve_app(container, port) as base, httpx.Client(base_url=base, headers=headers, timeout=30) as api:
        site = Site(base, token, owner, container, api)
        yield site
        for runner in site.runners.values():
            runner.close()


# the scenes issue 45's walk (test_web_ui_issue45_browser) sets up -------------------------------------------

REGO = """package terraform.policies.tagged
import rego.v1

deny contains msg if {
    some rc in input.plan.resource_changes
    msg := sprintf("%s: needs a tag", [rc.address])
}
"""
PLAN = {"format_version": "1.2", "resource_changes": [{"address": "null_resource.a", "type": "null_resource",
                                                       "change": {"actions": ["create"]}}]}  # fmt: skip


def planner(site: Site, ws_id: str) -> str:
    """dave, a member of epsilon whose team may plan `ws_id`: his token."""
    dave = site.container.accounts.create_user("dave", "dave@example.com")
    site.container.memberships.ensure(site.container.organizations.lookup("epsilon").key, dave)
    team = site.container.teams.create(site.owner, "epsilon", {"name": "planners"})
    users = {"data": [{"type": "users", "id": "dave"}]}
    assert site.api.post(f"/api/v2/teams/{team.id}/relationships/users", json=users).status_code == 204
    grant = {"data": {"type": "team-workspaces", "attributes": {"access": "plan"},
                      "relationships": {"team": {"data": {"type": "teams", "id": team.id}},
                                        "workspace": {"data": {"type": "workspaces", "id": ws_id}}}}}  # fmt: skip
    assert site.api.post("/api/v2/team-workspaces", json=grant).status_code == 201
    return site.container.accounts.issue_token(PrincipalKind.USER, dave.id).secret


HEALTH_PLAN = {
    "resource_drift": [{"address": "aws_s3_bucket.logs", "mode": "managed", "change": {"actions": ["update"],
                        "before": {"acl": "private", "id": "logs"}, "after": {"acl": "public-read", "id": "logs"}}}],
    "checks": [{"address": {"to_display": "check.health"}, "status": "fail",
                "instances": [{"problems": [{"message": "the endpoint answered 503"}]}]}],
}  # fmt: skip
TYPED_TF = 'variable "tags" {\n  type    = map(string)\n  default = { env = "dev" }\n}\n'
README = "# VPC\nA *network*. <script>alert(1)</script>\n"


def gamma(site: Site) -> tuple[str, str]:
    """gamma's workspace `site` (applied, with a state), module vpc/aws 1.0.0, the set `creds` applied to `site`
    with one variable, and bob (an account, no membership): the set's id and bob's token."""
    site_id = site.workspace("gamma", "site")
    site.upload_config(site_id)
    site.run(site_id, **{"auto-apply": True})
    site.work("gamma")  # plan
    site.work("gamma")  # apply
    site.container.workspaces.mutate(site_id, lambda ws: replace(ws, current_state_version_id="sv-1"))
    module = {"data": {"type": "registry-modules", "attributes": {"name": "vpc", "provider": "aws"}}}
    assert site.api.post("/api/v2/organizations/gamma/registry-modules", json=module).status_code == 201
    version = {"data": {"type": "registry-module-versions", "attributes": {"version": "1.0.0"}}}
    made = site.api.post("/api/v2/registry-modules/gamma/vpc/aws/versions", json=version)
    assert made.status_code == 201, made.text
    site.land(blob_key(made.json()["data"]["links"]["upload"]), tarball({"main.tf": TYPED_TF, "README.md": README}))
    applied = {"workspaces": {"data": [{"type": "workspaces", "id": site_id}]}}
    creds = {"data": {"type": "varsets", "attributes": {"name": "creds"}, "relationships": applied}}
    made = site.api.post("/api/v2/organizations/gamma/varsets", json=creds)
    assert made.status_code == 201, made.text
    region = {"data": {"type": "vars", "attributes": {"key": "region", "value": "eu-west-1", "category": "env"}}}
    set_id = str(made.json()["data"]["id"])
    assert site.api.post(f"/api/v2/varsets/{set_id}/relationships/vars", json=region).status_code == 201
    bob = site.container.accounts.create_user("bob", "bob@example.com")
    return set_id, site.container.accounts.issue_token(PrincipalKind.USER, bob.id).secret


@dataclass(frozen=True)
class Guarded:
    """acme's scene: `guarded`'s run waits for a policy override, `preview`'s speculative plan has changes."""

    guarded: str  # workspace ids
    preview: str
    run_id: str  # guarded's run
    outbound: MemoryOutbound


def acme(site: Site) -> Guarded:
    """acme's workspaces `guarded` (the overridable set `guardrails`, its parameter max_size, applied to it; the hook
    `hook` told of run:needs_attention) whose run's plan failed the mandatory policy `tagged`, and `preview`, a
    speculative plan of 2 to add. The policy is compiled and evaluated in child processes: done once for the file."""
    c = site.container
    guarded, preview = site.workspace("acme", "guarded"), site.workspace("acme", "preview")
    attrs = {"name": "tagged", "kind": "opa", "query": "data.terraform.policies.tagged.deny",
             "enforcement-level": "mandatory"}  # fmt: skip
    policy = c.policies.create_with_content(site.owner, "acme", attrs, REGO)
    guardrails = c.policy_sets.create(site.owner, "acme", {"name": "guardrails", "kind": "opa", "overridable": True},
                                      {"policies": [policy.id], "workspaces": [guarded]})  # fmt: skip
    limit = {"data": {"type": "vars", "attributes": {"key": "max_size", "value": "3", "category": "policy-set"}}}
    assert site.api.post(f"/api/v2/policy-sets/{guardrails.id}/parameters", json=limit).status_code == 201
    hook = {"data": {"type": "notification-configurations", "attributes": {
        "name": "hook", "destination-type": "generic", "url": "https://hooks.example/t", "enabled": True,
        "triggers": ["run:needs_attention"]}}}  # fmt: skip
    assert site.api.post(f"/api/v2/workspaces/{guarded}/notification-configurations", json=hook).status_code == 201
    assert isinstance(c.outbound, MemoryOutbound)
    for ws_id in (guarded, preview):
        site.upload_config(ws_id)
    run_id = site.run(guarded)
    site.work("acme", plan=PLAN, resource_additions=1)  # its plan, then the policy evaluation (a child process)
    assert c.run_store.load(run_id).status == "post_plan_awaiting_decision"
    site.run(preview, **{"plan-only": True})
    site.work("acme", resource_additions=2)
    return Guarded(guarded, preview, run_id, c.outbound)


POLICIES_HCL = """policy "no_null" {
  query             = "data.terraform.policies.no_null.deny"
  enforcement_level = "mandatory"
}
"""
NO_NULL = """package terraform.policies.no_null
import rego.v1

deny contains rc.address if {
    some rc in input.plan.resource_changes
    rc.type == "null_resource"
}
"""
PAT = "ghp_browsertoken"


def github(site: Site, org: str, *repositories: str) -> Callable[[str], dict[str, Any]]:
    """`org`'s GitHub provider (the memory forge) and `repositories` on it (a policy and a module on `main`): the
    `vcs-repo` attributes of one of them."""
    forge = site.container.forge
    assert isinstance(forge, MemoryForge)
    files = {"policies/policies.hcl": POLICIES_HCL.encode(), "policies/no_null/main.rego": NO_NULL.encode(),
             "main.tf": b'variable "cidr" {\n  type = string\n}\n'}  # fmt: skip
    for repo in repositories:
        forge.add(repo, PAT)
        forge.push(repo, "main", files, "first")
    client = {"data": {"type": "oauth-clients", "attributes": {"service-provider": "github", "oauth-token-string": PAT,
              "http-url": "https://github.com", "api-url": "https://api.github.com"}}}  # fmt: skip
    made = site.api.post(f"/api/v2/organizations/{org}/oauth-clients", json=client)
    assert made.status_code == 201, made.text
    token = made.json()["data"]["relationships"]["oauth-tokens"]["data"][0]["id"]
    return lambda repo: {"identifier": repo, "oauth-token-id": token, "branch": "main", "display-identifier": repo}


def versioned_sets(site: Site) -> tuple[str, str, str]:
    """zeta's policy sets `uploaded`, with a version uploaded through the API, and `from-repo`, whose versions come
    from a repository: their ids and the uploaded version's."""
    vcs = github(site, "zeta", "octo/policies")
    ids = []
    from_repo = {"vcs-repo": vcs("octo/policies"), "policies-path": "policies"}
    for name, extra in (("uploaded", {}), ("from-repo", from_repo)):
        body = {"data": {"type": "policy-sets", "attributes": {"name": name, "kind": "opa", **extra}}}
        made = site.api.post("/api/v2/organizations/zeta/policy-sets", json=body)
        assert made.status_code == 201, made.text
        ids.append(str(made.json()["data"]["id"]))
    version = site.api.post(f"/api/v2/policy-sets/{ids[0]}/versions")
    assert version.status_code == 201, version.text
    site.land(blob_key(version.json()["data"]["links"]["upload"]),
              tarball({"policies.hcl": POLICIES_HCL, "no_null/main.rego": NO_NULL}))  # fmt: skip
    site.drain()  # the connection's first version
    return ids[0], ids[1], str(version.json()["data"]["id"])


def from_repositories(site: Site) -> None:
    """eta's module net/aws, published from a repository's branch, and workspace `infra`, connected to another;
    a change request on `infra`."""
    vcs = github(site, "eta", "octo/terraform-aws-net", "octo/infra")
    module = {"data": {"type": "registry-modules", "attributes": {"vcs-repo": vcs("octo/terraform-aws-net"),
                                                                  "initial-version": "0.1.0"}}}  # fmt: skip
    made = site.api.post("/api/v2/organizations/eta/registry-modules/vcs", json=module)
    assert made.status_code == 201, made.text
    infra = site.workspace("eta", "infra", **{"vcs-repo": vcs("octo/infra")})
    site.drain()  # the connections' first versions
    ws = site.container.workspaces.load(infra)
    site.container.change_requests.create_for(site.owner, "eta", [ws], "Pin the provider", "Pin aws to 5.x.")
