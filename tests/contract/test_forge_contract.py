"""The forge port (`adapters/forge.py: Forge`): the REST calls Terrace makes to a forge. Implementations:
`GitHubForge` against the forge twin (real git repositories; every request checked against GitHub's OpenAPI
document), `GitLabForge` (reached through `ForgeByKind`, as the composition root hands it) against the GitLab twin
(the same repositories; every request checked against GitLab's documented API) and `MemoryForge`. All read a
repository, register and delete a hook, confirm a commit, hand its tarball (one top-level folder), list changed
files, set a commit status (in the forge's own names of the states) and write a pull request's comment, then edit
it in place (a deleted one is a 404); all refuse a bad credential. GitLab's
projects in nested groups are named by their encoded path; a merge request's files are read page by page.
`GitHubForge` follows the tarball's redirect to another host without the credential, and refuses one to an address
the deployment does not allow, as every outbound request; so does `BitbucketForge` with its archive's. Bitbucket
Cloud (`BitbucketForge`), Bitbucket Data Center (`BitbucketServerForge`) and Azure DevOps Services
(`AzureDevOpsForge`) run against their twins (`bitbucket_twin.py`, `azure_twin.py`), whose contracts are the
vendors' published descriptions; the Azure DevOps excerpts are checked against Microsoft's specification itself
when a copy of it is at hand."""

from __future__ import annotations

import io
import ipaddress
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from azure_contract import SPECS, published_problems
from azure_twin import AzureDevOpsTwin
from bitbucket_server_twin import BitbucketServerTwin
from bitbucket_twin import BitbucketCloudTwin
from forge_twin import ForgeTwin
from git_forge import git
from github_contract import missing
from gitlab_twin import GitLabTwin
from terrace.adapters.azure_devops_forge import AzureDevOpsForge
from terrace.adapters.bitbucket_forge import BitbucketForge
from terrace.adapters.bitbucket_server_forge import BitbucketServerForge
from terrace.adapters.forge import CommitStatus, Forge, ForgeAccess, ForgeByKind, ForgeError, forge_state
from terrace.adapters.github_forge import GitHubForge
from terrace.adapters.gitlab_forge import GitLabForge
from terrace.adapters.memory_forge import MemoryForge
from terrace.domain.destinations import Allowance

REPO, TOKEN = "octo/infra", "ghp_contracttoken"
ADO_REPO = "octo/proj/_git/infra"


@dataclass
class World:
    forge: Forge
    access: ForgeAccess
    push: Callable[[dict[str, str], str], str]  # files, branch -> sha
    statuses: Callable[[], list[tuple[str, str]]]  # (sha, state)
    hooks: Callable[[], int]
    twin: ForgeTwin | None = None
    repo: str = REPO
    missing: str = "octo/none"
    comments: Callable[[], dict[str, tuple[int, str]]] = dict  # id -> (pull request, body)


def _memory(_: Path) -> Iterator[World]:
    forge = MemoryForge()
    repo = forge.add(REPO, TOKEN)

    def push(files: dict[str, str], branch: str) -> str:
        base = repo.commits[repo.refs["main"]][1] if "main" in repo.refs else {}
        return forge.push(REPO, branch, {**base, **{k: v.encode() for k, v in files.items()}})

    yield World(
        forge,
        ForgeAccess("https://api.github.com", TOKEN),
        push,
        lambda: [(sha, s.state) for sha, s in repo.statuses],
        lambda: len(repo.hooks),
        comments=lambda: dict(repo.comments),
    )


def _github(root: Path) -> Iterator[World]:
    if reason := missing():
        pytest.skip(reason)
    with ForgeTwin(root, TOKEN) as twin:
        work = twin.create(REPO)

        def push(files: dict[str, str], branch: str) -> str:
            if branch != "main":
                from git_forge import git

                git("checkout", "--quiet", "-B", branch, cwd=work)
            sha = twin.commit_and_push(work, files, "change", branch)[1]
            from git_forge import git

            git("checkout", "--quiet", "main", cwd=work)
            return sha

        repo = twin.repos[REPO]
        forge = GitHubForge(Allowance.parse(["127.0.0.0/8"]))
        yield World(
            forge,
            ForgeAccess(twin.api_url, TOKEN),
            push,
            lambda: [(sha, body["state"]) for sha, body in repo.statuses],
            lambda: len(repo.hooks),
            twin,
            comments=lambda: {str(k): v for k, v in repo.comments.items()},
        )
        assert twin.problems == []


def _gitlab(root: Path) -> Iterator[World]:
    with GitLabTwin(root, TOKEN) as twin:
        work = twin.create(REPO)

        def push(files: dict[str, str], branch: str) -> str:
            git("checkout", "--quiet", "-B", branch, cwd=work)
            sha = twin.commit_and_push(work, files, "change", branch)[1]
            git("checkout", "--quiet", "main", cwd=work)
            return sha

        repo = twin.repos[REPO]
        allowance = Allowance.parse(["127.0.0.0/8"])
        forge = ForgeByKind({"github": GitHubForge(allowance), "gitlab": GitLabForge(allowance)})
        yield World(
            forge,
            ForgeAccess(twin.api_url, TOKEN, "gitlab"),
            push,
            lambda: [(sha, body["state"]) for sha, body in repo.statuses],
            lambda: len(repo.hooks),
            twin,
            comments=lambda: {str(k): v for k, v in repo.comments.items()},
        )
        assert twin.problems == []


def _twinned(twin_class: type[ForgeTwin], kind: str, repo: str = REPO, missing: str = "octo/none") -> Any:
    def world(root: Path) -> Iterator[World]:
        with twin_class(root, TOKEN) as twin:
            work = twin.create(repo)

            def push(files: dict[str, str], branch: str) -> str:
                git("checkout", "--quiet", "-B", branch, cwd=work)
                sha = twin.commit_and_push(work, files, "change", branch)[1]
                git("checkout", "--quiet", "main", cwd=work)
                return sha

            found = twin.repos[repo]
            yield World(_by_kind(), ForgeAccess(twin.api_url, TOKEN, kind), push,
                        lambda: [(sha, body["state"]) for sha, body in found.statuses],
                        lambda: len(set(found.hooks.values())), twin, repo, missing,
                        lambda: {str(k): v for k, v in found.comments.items()})  # fmt: skip
            assert twin.problems == []

    return world


def _by_kind() -> ForgeByKind:
    allowance = Allowance.parse(["127.0.0.0/8"])
    return ForgeByKind({"github": GitHubForge(allowance), "gitlab": GitLabForge(allowance),
                        "bitbucket": BitbucketForge(allowance), "bitbucket_server": BitbucketServerForge(allowance),
                        "azure_devops": AzureDevOpsForge(allowance)})  # fmt: skip


WORLDS = {
    "memory": _memory,
    "github": _github,
    "gitlab": _gitlab,
    "bitbucket": _twinned(BitbucketCloudTwin, "bitbucket"),
    "bitbucket_server": _twinned(BitbucketServerTwin, "bitbucket_server", "PRJ/infra", "PRJ/none"),
    "azure_devops": _twinned(AzureDevOpsTwin, "azure_devops", ADO_REPO, "octo/proj/_git/none"),
}


@pytest.fixture(params=list(WORLDS))
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    yield from WORLDS[request.param](tmp_path)


def _files(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:  # the test reads what the forge sent, bounded or not
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_the_calls_behave_alike(world: World) -> None:
    first = world.push({"main.tf": "# one\n", "env/prod/main.tf": "# p\n"}, "main")
    second = world.push({"main.tf": "# two\n"}, "main")
    repository = world.forge.repository(world.access, world.repo)
    assert repository.default_branch == "main" and repository.identifier == world.repo
    hook = world.forge.create_hook(world.access, world.repo, "https://terrace.test/api/vcs/webhooks/ws-1", "s" * 64)
    assert world.hooks() == 1
    world.forge.delete_hook(world.access, world.repo, hook)
    world.forge.delete_hook(world.access, world.repo, hook)  # gone already: fine
    assert world.hooks() == 0
    commit = world.forge.commit(world.access, world.repo, "main")
    assert commit.sha == second and commit.message.strip() == "change"
    files = _files(world.forge.tarball(world.access, world.repo, second, 10_000_000))
    tops = {name.split("/", 1)[0] for name in files}
    assert len(tops) == 1 and {n.split("/", 1)[1] for n in files} == {"main.tf", "env/prod/main.tf"}
    assert files[f"{tops.pop()}/main.tf"] == b"# two\n"
    assert world.forge.changed_files(world.access, world.repo, first, second) == ["main.tf"]
    status = CommitStatus("pending", "Terrace/acme/app", "Terrace: Run pending", "https://terrace.test/app/acme")
    world.forge.set_status(world.access, world.repo, second, status)
    assert world.statuses() == [(second, forge_state(world.access.kind, "pending"))]
    world.forge.set_status(world.access, world.repo, second, replace(status, state="failure"))
    assert world.statuses()[-1] == (
        second,
        "failure" if world.twin is None else forge_state(world.access.kind, "failure"),
    )


def test_a_pull_request_s_comment_is_written_then_edited_in_place(world: World) -> None:
    base = world.push({"main.tf": "# one\n"}, "main")
    head = world.push({"main.tf": "# two\n"}, "feature")
    if world.twin is not None:
        world.twin.repos[world.repo].pulls[7] = (base, head)  # the pull (merge) request the twin knows
    comment_id = world.forge.comment(world.access, world.repo, 7, "#### Terrace/acme/app\n\n**1 to add**", None)
    assert world.comments() == {comment_id: (7, "#### Terrace/acme/app\n\n**1 to add**")}
    assert world.forge.comment(world.access, world.repo, 7, "**No changes.**", comment_id) == comment_id
    assert world.comments() == {comment_id: (7, "**No changes.**")}
    assert world.forge.comment(world.access, world.repo, 7, "**Errored**", comment_id) == comment_id  # twice
    assert world.comments() == {comment_id: (7, "**Errored**")}
    with pytest.raises(ForgeError) as gone:
        world.forge.comment(world.access, world.repo, 7, "x", "999999")
    assert gone.value.status == 404


def test_a_bad_credential_or_an_unknown_repository_is_a_forge_error(world: World) -> None:
    world.push({"main.tf": "# one\n"}, "main")
    with pytest.raises(ForgeError) as bad:
        world.forge.repository(replace(world.access, token="wrong"), world.repo)
    assert bad.value.status == 401
    with pytest.raises(ForgeError) as unknown:
        world.forge.commit(world.access, world.missing, "main")
    assert unknown.value.status == 404


def test_the_tarball_s_redirect_passes_the_destination_checks(tmp_path: Path) -> None:
    if reason := missing():
        pytest.skip(reason)

    def resolver(host: str, port: int) -> list[Any]:
        return [ipaddress.ip_address("169.254.169.254" if host == "metadata.test" else host)]

    with ForgeTwin(tmp_path, TOKEN) as twin:
        work = twin.create(REPO)
        sha = twin.commit_and_push(work, {"main.tf": "# x\n"}, "change")[1]
        only_api = Allowance.parse(["127.0.0.1/32"])
        forge = GitHubForge(only_api, resolver=resolver)
        assert forge.tarball(ForgeAccess(twin.api_url, TOKEN), REPO, sha, 1_000_000)  # allowed both hops
        twin.codeload_host = "metadata.test"  # a redirect to the instance metadata address
        with pytest.raises(ForgeError) as blocked:
            forge.tarball(ForgeAccess(twin.api_url, TOKEN), REPO, sha, 1_000_000)
        assert "blocked" in blocked.value.detail and "link-local" in blocked.value.detail
        twin.codeload_host = "127.0.0.1"
        with pytest.raises(ForgeError) as inward:  # an api-url the deployment does not allow
            GitHubForge(Allowance(), resolver=resolver).commit(ForgeAccess(twin.api_url, TOKEN), REPO, sha)
        assert "blocked" in inward.value.detail
        with pytest.raises(ForgeError) as too_big:
            forge.tarball(ForgeAccess(twin.api_url, TOKEN), REPO, sha, 10)
        assert "larger than 10 bytes" in too_big.value.detail
        assert twin.problems == []


def test_gitlab_reads_a_merge_request_s_files_and_names_a_nested_project_by_its_encoded_path(tmp_path: Path) -> None:
    nested = "platform/team/infra"
    with GitLabTwin(tmp_path, TOKEN) as twin:
        work = twin.create(nested)
        twin.commit_and_push(work, {"main.tf": "# one\n"}, "first")
        git("checkout", "--quiet", "-B", "feature", cwd=work)
        head = twin.commit_and_push(work, {f"mod/{i}.tf": "#\n" for i in range(105)}, "many", "feature")[1]
        twin.merge_request_payload(nested, 3, head, "feature")  # records the merge request's base and head
        forge = GitLabForge(Allowance.parse(["127.0.0.0/8"]))
        access = ForgeAccess(twin.api_url, TOKEN, "gitlab")
        assert forge.repository(access, nested).identifier == nested
        files = forge.pull_files(access, nested, 3)
        assert files is not None and len(files) == 105 and "mod/104.tf" in files  # two pages
        assert "GET /projects/platform/team/infra/merge_requests/3/diffs" in twin.calls
        assert forge.pull_files(access, nested, 99) is None  # no `diffs` (GitLab before 15.7): it cannot say
        assert twin.problems == []


def test_bitbucket_s_archive_redirect_passes_the_destination_checks(tmp_path: Path) -> None:
    def resolver(host: str, port: int) -> list[Any]:
        return [ipaddress.ip_address("169.254.169.254" if host == "metadata.test" else host)]

    with BitbucketCloudTwin(tmp_path, TOKEN) as twin:
        work = twin.create(REPO)
        sha = twin.commit_and_push(work, {"main.tf": "# x\n"}, "change")[1]
        forge = BitbucketForge(Allowance.parse(["127.0.0.1/32"]), resolver=resolver)
        access = ForgeAccess(twin.api_url, TOKEN, "bitbucket")
        assert _files(forge.tarball(access, REPO, sha, 1_000_000))  # the web host, then the download host
        twin.codeload_host = "metadata.test"  # a redirect to the instance metadata address
        with pytest.raises(ForgeError) as blocked:
            forge.tarball(access, REPO, sha, 1_000_000)
        assert "blocked" in blocked.value.detail and "link-local" in blocked.value.detail
        assert twin.problems == []  # the token went to the web host, never to the download host


def test_the_azure_devops_excerpts_are_microsoft_s_published_specification() -> None:
    problems = published_problems()
    if problems is None:
        pytest.skip(f"no copy of MicrosoftDocs/vsts-rest-api-specs at {SPECS} (set VSTS_REST_API_SPECS)")
    assert problems == []
