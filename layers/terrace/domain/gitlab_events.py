"""GitLab's webhook deliveries read as the same `Push` and `PullRequest` a GitHub-shaped forge's become
(`vcs_events.py`), from GitLab's documented payloads: a push (`object_kind` `push`) and a tag push (`tag_push`):
`ref`, `before`, `after`, `user_username`, `project.path_with_namespace` and `web_url`; a merge request
(`merge_request`): `object_attributes` (`iid`, `action`, `source_branch`, `target_branch`, `source_project_id`,
`target_project_id`, `last_commit.id`, `url`, `title`, `oldrev`), `user.username`, `project`, `source`. Pure: the
delivery was verified (its token) by `services/vcs/webhooks.py`; the commit and changed files are read from the API.
A merge request `update` is a new head only when it carries `oldrev` (GitLab sends it when commits were pushed; a
title or label edit starts nothing); one whose source project is not its target's is a fork's."""

from __future__ import annotations

from typing import Any

from terrace.domain.vcs_events import SHA_RE, ZERO_SHA, PullRequest, Push, _get, _text

EVENTS = {"Push Hook": "push", "Tag Push Hook": "tag_push", "Merge Request Hook": "merge_request"}
ACTIONS = {"open": "opened", "reopen": "reopened", "update": "synchronize"}  # GitLab's -> GitHub's names


def read_push(payload: Any) -> Push | None:
    """A push or tag push Terrace can act on; None for a deletion or a malformed one."""
    if _get(payload, "object_kind") not in ("push", "tag_push"):
        return None
    after, before, ref = _text(_get(payload, "after")), _text(_get(payload, "before")), _text(_get(payload, "ref"))
    if not SHA_RE.match(after) or after == ZERO_SHA or not ref.startswith(("refs/heads/", "refs/tags/")):
        return None
    before = before if SHA_RE.match(before) else ZERO_SHA
    web_url = _text(_get(payload, "project", "web_url"), 2048)
    compare = (
        f"{web_url}/-/compare/{before}...{after}"
        if web_url.startswith(("https://", "http://")) and before != ZERO_SHA
        else ""
    )
    repository = _text(_get(payload, "project", "path_with_namespace"))
    return Push(ref, before, after, repository, _text(_get(payload, "user_username")), compare)


def read_merge_request(payload: Any) -> PullRequest | None:
    """A merge request opened, reopened or given new commits; None for any other action or a malformed one."""
    attrs = _get(payload, "object_attributes")
    if _get(payload, "object_kind") != "merge_request" or not isinstance(attrs, dict):
        return None
    action = _text(attrs.get("action"), 64)
    if action == "update" and not SHA_RE.match(_text(attrs.get("oldrev"))):
        return None  # an edit of the title, labels or reviewers: no new commit
    number, head_sha = attrs.get("iid"), _text(_get(attrs, "last_commit", "id"))
    if not isinstance(number, int) or isinstance(number, bool) or not 0 < number < 2**31 or not SHA_RE.match(head_sha):
        return None
    repository = _text(_get(payload, "project", "path_with_namespace"))
    source, target = attrs.get("source_project_id"), attrs.get("target_project_id")
    same = isinstance(source, int) and source == target
    # a fork's merge request names its own project: never the target's, even when the payload says so
    head_repository = repository if same else (_text(_get(payload, "source", "path_with_namespace")) or "(fork)")
    if not same and head_repository.lower() == repository.lower():
        head_repository = "(fork)"
    return PullRequest(
        action=ACTIONS.get(action, action), number=number, head_sha=head_sha,
        head_ref=_text(attrs.get("source_branch")), head_repository=head_repository,
        base_ref=_text(attrs.get("target_branch")), repository=repository, url=_text(attrs.get("url"), 2048),
        title=_text(attrs.get("title"), 1024), sender=_text(_get(payload, "user", "username")),
    )  # fmt: skip
