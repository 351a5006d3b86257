"""`ingress-submodules`: a commit's files with its submodules come from a shallow git clone
(`adapters/git_repository_clone.py`) of repositories served over git's smart HTTP protocol by `git http-backend` (the
forge twin), not from the forge's tarball. Each submodule's URL (a relative one resolved against its parent's) passes
the outbound destination checks before git may reach it, so a `.gitmodules` naming a link-local, loopback (unless the
deployment allows it), `file://` or `ssh` URL refuses the clone; the credential goes only to the repository's own URL;
the checkout is packed without `.git` and read by the bounded archive reader; a push to a workspace with
`ingress-submodules` makes its configuration version of the commit with its submodules."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import tarfile
from collections.abc import Iterator

import pytest
from forge_twin import ForgeTwin
from git_forge import git
from run_helpers import make_run_env
from terrace.adapters.git_repository_clone import GitRepositoryClone
from terrace.adapters.memory_forge import MemoryForge
from terrace.adapters.repository_clone import CloneError, CloneRequest
from terrace.domain.destinations import LOOPBACK_ONLY, Allowance
from terrace.services.vcs.webhooks import DELIVERY
from test_vcs_connections import PAT, github_client, repo

CREDENTIAL = "ghp_onlyforthesuperproject"


def _gitlink(twin: ForgeTwin, name: str, gitmodules: str, files: dict[str, str]) -> str:
    """A repository whose `.gitmodules` is `gitmodules` (one submodule at octo/lib's head), pushed: its SHA."""
    work = twin.create(name)
    (work / ".gitmodules").write_text(gitmodules)
    lib_sha = twin._rev(twin.repos["octo/lib"], "refs/heads/main")
    path = gitmodules.split("path = ")[1].split("\n")[0]
    (work / path).mkdir(parents=True)  # an unpopulated submodule (`git add -A` would take a missing one as deleted)
    git("update-index", "--add", "--cacheinfo", f"160000,{lib_sha},{path}", cwd=work)
    return twin.commit_and_push(work, files, "with a submodule")[1]


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForgeTwin]:
    with ForgeTwin(tmp_path_factory.mktemp("forge"), "token") as forge:
        lib = forge.create("octo/lib")
        forge.commit_and_push(lib, {"main.tf": 'output "lib" { value = "from the submodule" }\n'}, "lib")
        forge.commit_and_push(lib, {"README.md": "# lib\n"}, "second")  # its head is not the only commit
        yield forge


def _request(twin: ForgeTwin, name: str, sha: str) -> CloneRequest:
    return CloneRequest(f"{twin.http_url}/git/{name}.git", sha, CREDENTIAL, 10 * 1024 * 1024, 1000, 60)


def _files(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_a_commit_is_cloned_with_its_submodules_and_the_credential_goes_only_to_its_repository(twin: ForgeTwin) -> None:
    sha = _gitlink(twin, "octo/app", '[submodule "lib"]\n\tpath = lib\n\turl = ../lib.git\n',
                   {"main.tf": 'module "lib" { source = "./lib" }\n'})  # fmt: skip
    twin.git_requests.clear()
    files = _files(GitRepositoryClone(LOOPBACK_ONLY).clone(_request(twin, "octo/app", sha)))
    assert set(files) == {"repo/.gitmodules", "repo/main.tf", "repo/lib/main.tf", "repo/lib/README.md"}
    assert b"from the submodule" in files["repo/lib/main.tf"]
    asked = {path.split(".git/")[0] for path, _ in twin.git_requests}
    assert asked == {"/git/octo/app", "/git/octo/lib"}
    for path, authorization in twin.git_requests:
        assert bool(authorization) == path.startswith("/git/octo/app.git/"), (path, authorization)


@pytest.mark.parametrize(
    "url",
    ["http://169.254.169.254/latest.git", "file:///etc", "ssh://git@forge.test/octo/lib.git", "http://10.1.2.3/x.git"],
)
def test_a_submodule_url_outside_the_allowed_destinations_refuses_the_clone(twin: ForgeTwin, url: str) -> None:
    name = f"octo/evil-{hashlib.sha1(url.encode()).hexdigest()[:8]}"
    sha = _gitlink(twin, name, f'[submodule "lib"]\n\tpath = lib\n\turl = {url}\n', {"main.tf": "# x\n"})
    with pytest.raises(CloneError, match="submodule lib"):
        GitRepositoryClone(LOOPBACK_ONLY).clone(_request(twin, name, sha))


def test_a_repository_on_a_loopback_address_is_refused_unless_the_deployment_allows_it(twin: ForgeTwin) -> None:
    sha = twin._rev(twin.repos["octo/lib"], "refs/heads/main")
    with pytest.raises(CloneError, match="loopback"):
        GitRepositoryClone(Allowance()).clone(_request(twin, "octo/lib", sha))
    small = CloneRequest(f"{twin.http_url}/git/octo/lib.git", sha, CREDENTIAL, 10 * 1024 * 1024, 1, 60)
    with pytest.raises(CloneError, match="more than 1 files"):
        GitRepositoryClone(LOOPBACK_ONLY).clone(small)


def test_a_push_to_a_workspace_with_ingress_submodules_makes_its_version_from_the_clone(twin: ForgeTwin) -> None:
    name = "octo/infra-with-lib"
    sha = _gitlink(twin, name, '[submodule "lib"]\n\tpath = modules/lib\n\turl = ../lib.git\n', {"main.tf": "# x\n"})
    env = make_run_env()
    env.container.repository_clone = GitRepositoryClone(LOOPBACK_ONLY)
    forge = env.container.forge
    assert isinstance(forge, MemoryForge)
    memory = forge.add(name, PAT)
    memory.clone_url, memory.refs["main"], memory.commits[sha] = f"{twin.http_url}/git/{name}.git", sha, ("m", {})
    token = github_client(env)
    body = {"data": {"type": "workspaces", "attributes": {
        "vcs-repo": repo(token, name, **{"ingress-submodules": True}), "queue-all-runs": True}}}  # fmt: skip
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", body).status_code == 200
    [(_, secret)] = memory.hooks.values()
    payload = json.dumps({"ref": "refs/heads/main", "before": "0" * 40, "after": sha, "repository":
                          {"full_name": name}, "sender": {"login": "octocat"}}).encode()  # fmt: skip
    headers = {
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": "d-sub",
        "X-Hub-Signature-256": "sha256=" + hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest(),
    }
    assert env.client.post(f"/api/vcs/webhooks/{env.workspace_id}", content=payload, headers=headers).status_code == 202
    events = env.container.publisher.events  # type: ignore[attr-defined]
    for event in [e for e in events if e.get("type") == DELIVERY]:
        env.container.events.handle(event)
    [run] = env.api("GET", f"/workspaces/{env.workspace_id}/runs").json()["data"]
    cv_id = run["relationships"]["configuration-version"]["data"]["id"]
    files = _files(env.blobs.get(f"config/{env.workspace_id}/{cv_id}.tar.gz"))
    assert set(files) == {".gitmodules", "main.tf", "modules/lib/main.tf", "modules/lib/README.md"}
    assert f"GET /repos/{name}/tarball/{sha}" not in forge.calls  # the clone, not the tarball
