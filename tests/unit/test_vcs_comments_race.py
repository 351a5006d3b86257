"""Two plans of one pull request that finish together write one comment (`services/vcs/comments.py`): the claim
of the pull request's comment is a conditional write, so one plan creates the comment on the forge twin (GitHub's
REST calls over HTTP, `tests/forge_twin.py`) and the other's text reaches that same comment, whether the claimant
has recorded the comment's id yet or not. A claimant that died leaves a claim the next plan takes over."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from forge_twin import ForgeTwin
from terrace.adapters.forge import ForgeAccess
from terrace.adapters.github_forge import GitHubForge
from terrace.adapters.memory_table import MemoryTable
from terrace.domain.destinations import Allowance
from terrace.services.vcs.comments import CLAIM_STALE_S, PlanComments
from terrace.services.vcs.store import VcsStore

REPO, TOKEN, WORKSPACE, NUMBER = "octo/infra", "twin-token", "ws-racecomments0001", 7
DEADLINE_S = 10  # the first create waits this long at most for the second plan's write to end


class FirstCreateWaits:
    """The GitHub adapter, whose first comment creation waits until `release` is set (the second plan's write
    ended): the first plan is still talking to the forge while the second finishes."""

    def __init__(self, forge: GitHubForge) -> None:
        self._forge, self._first = forge, True
        self.entered, self.release = threading.Event(), threading.Event()

    def comment(self, access: ForgeAccess, repo: str, number: int, body: str, comment_id: str | None) -> str:
        if comment_id is None and self._first:
            self._first = False
            self.entered.set()
            assert self.release.wait(DEADLINE_S), "the second plan's write did not end"
        return self._forge.comment(access, repo, number, body, comment_id)


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForgeTwin]:
    with ForgeTwin(tmp_path_factory.mktemp("forge"), TOKEN) as forge:
        forge.create(REPO)
        yield forge


@pytest.fixture
def pull(twin: ForgeTwin) -> Iterator[dict[int, tuple[int, str]]]:
    """A fresh pull request's comments on the twin."""
    repo = twin.repos[REPO]
    repo.pulls[NUMBER] = ("0" * 40, "1" * 40)
    repo.comments.clear()
    yield repo.comments
    assert twin.problems == []


def _access(twin: ForgeTwin) -> ForgeAccess:
    return ForgeAccess(twin.api_url, TOKEN)


def _github() -> GitHubForge:
    return GitHubForge(Allowance.parse(["127.0.0.0/8"]))


def test_two_plans_finishing_together_write_one_comment(twin: ForgeTwin, pull: dict[int, Any]) -> None:
    forge = FirstCreateWaits(_github())
    comments = PlanComments(VcsStore(MemoryTable()), forge)  # type: ignore[arg-type]
    errors: list[BaseException] = []

    def first() -> None:
        try:
            comments.write(_access(twin), WORKSPACE, REPO, NUMBER, "plan of the first push")
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            errors.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert forge.entered.wait(DEADLINE_S), errors  # the first plan is creating the comment
        comments.write(_access(twin), WORKSPACE, REPO, NUMBER, "plan of the second push")
    finally:
        forge.release.set()
        thread.join(DEADLINE_S)
    assert not thread.is_alive() and errors == []
    assert [number for number, _ in pull.values()] == [NUMBER]  # one comment on the pull request
    [(_, text)] = pull.values()
    assert text == "plan of the second push"  # the later plan's text, handed over to the claimant
    posts = [c for c in twin.calls if c.startswith("POST") and "/comments" in c]
    assert len(posts) == 1, twin.calls


def test_a_later_plan_edits_the_recorded_comment_and_a_stale_claim_is_taken_over(
    twin: ForgeTwin, pull: dict[int, Any]
) -> None:
    clock = [1_000_000.0]
    store = VcsStore(MemoryTable())
    comments = PlanComments(store, _github(), now_s=lambda: clock[0])
    assert store.comments.claim(WORKSPACE, NUMBER, int(clock[0])) is not None  # a claimant that died
    comments.write(_access(twin), WORKSPACE, REPO, NUMBER, "handed over")
    assert pull == {}  # left for the claimant, within the claim's life
    clock[0] += CLAIM_STALE_S
    comments.write(_access(twin), WORKSPACE, REPO, NUMBER, "taken over")
    [(comment_id, (_, text))] = pull.items()
    assert text == "taken over"
    comments.write(_access(twin), WORKSPACE, REPO, NUMBER, "edited")
    assert pull == {comment_id: (NUMBER, "edited")}
    del pull[comment_id]  # deleted on the forge: written anew
    comments.write(_access(twin), WORKSPACE, REPO, NUMBER, "anew")
    [(again, (_, text))] = pull.items()
    assert again != comment_id and text == "anew"
