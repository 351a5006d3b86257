"""Speculative plan comments (`services/vcs/comments.py`), in-process against the memory forge: off by default; with
the organization's `speculative-plan-comments-enabled` a pull request's plan ends with one comment (its counts and a
link to the run, nothing of the plan's text), a later push's plan edits that same comment, one deleted on the forge
is written anew, and a push to the tracked branch writes none."""

from __future__ import annotations

from test_vcs_deliveries import FILES, REPO, _deliver, _pr, _push, _runs, _setup, _work


def _enable(env: object, on: bool = True) -> None:
    body = {"data": {"type": "organizations", "attributes": {"speculative-plan-comments-enabled": on}}}
    answer = env.api("PATCH", "/organizations/acme", body)  # type: ignore[attr-defined]
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"]["attributes"]["speculative-plan-comments-enabled"] is on


def test_a_pull_request_s_plan_writes_one_comment_and_later_plans_edit_it() -> None:
    env, forge, _ = _setup()
    repo = forge.repositories[REPO]
    forge.push(REPO, "main", FILES)
    first = forge.push(REPO, "feature", {**FILES, "main.tf": b"# one\n"})
    repo.pulls[7] = ["main.tf"]
    _deliver(env, forge, "pull_request", _pr(forge, first), "d-0")
    _work(env)
    env.work_next()
    _work(env)
    assert repo.comments == {}  # off by default
    _enable(env)
    second = forge.push(REPO, "feature", {**FILES, "main.tf": b"# two\n"})
    _deliver(env, forge, "pull_request", _pr(forge, second, action="synchronize"), "d-1")
    _work(env)
    assert repo.comments == {}  # the plan has not finished: no comment yet
    env.work_next(has_changes=True)
    _work(env)
    [(comment_id, (number, text))] = repo.comments.items()
    newest = _runs(env)[0]["id"]
    assert number == 7 and "Terrace/acme/app" in text and "1 to add, 0 to change, 0 to destroy" in text
    assert f"/app/acme/workspaces/app/runs/{newest})" in text and second[:12] in text
    assert "working" not in text  # nothing of the plan's log
    third = forge.push(REPO, "feature", {**FILES, "main.tf": b"# three\n"})
    _deliver(env, forge, "pull_request", _pr(forge, third, action="synchronize"), "d-2")
    _work(env)
    env.work_next(has_changes=False)
    _work(env)
    assert list(repo.comments) == [comment_id]  # edited in place
    assert "No changes" in repo.comments[comment_id][1] and third[:12] in repo.comments[comment_id][1]
    assert f"PATCH /repos/{REPO}/issues/comments/{comment_id}" in forge.calls
    posts = [c for c in forge.calls if c == f"POST /repos/{REPO}/issues/7/comments"]
    assert len(posts) == 1
    del repo.comments[comment_id]  # deleted on the forge: the next plan writes a new one
    fourth = forge.push(REPO, "feature", {**FILES, "main.tf": b"# four\n"})
    _deliver(env, forge, "pull_request", _pr(forge, fourth, action="synchronize"), "d-3")
    _work(env)
    env.work_next(status="errored")
    _work(env)
    [(again, (_, text))] = repo.comments.items()
    assert again != comment_id and "Errored" in text


def test_a_push_to_the_tracked_branch_writes_no_comment() -> None:
    env, forge, _ = _setup(**{"auto-apply": True})
    _enable(env)
    forge.push(REPO, "main", FILES)
    _deliver(env, forge, "push", _push(forge, {**FILES, "main.tf": b"# pushed\n"}), "d-1")
    _work(env)
    env.work_next()  # the plan
    _work(env)
    env.work_next()  # the apply
    _work(env)
    assert [s.state for _, s in forge.repositories[REPO].statuses][-1] == "success"
    assert forge.repositories[REPO].comments == {}
