"""A forge's webhook deliveries as Terrace reads them (GitHub's `push` and `pull_request` shapes, which Gitea and
Forgejo send too), and the rules that decide whether one starts a run: the tracked branch, `[ci skip]`, the tags
regex, file triggers. Pure: the payload was verified (its HMAC) by `services/vcs/webhooks.py`; what the forge's API
can confirm (the commit, its message, the changed files) is read from it, not from here."""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass
from typing import Any

from terrace.domain import tenant_regex

ZERO_SHA = "0" * 40
SKIP_MARKERS = ("[ci skip]", "[skip ci]")
SHA_RE = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?\Z")
REF_MAX = 255
TAG_MATCH_MAX = 128  # tag names the tags regex is tried on (longer ones never match: bounded matching)
TAG_MATCH_TIMEOUT_S = 0.05  # a tenant's tags regex gets this long per tag (`regex`'s timeout), then matches nothing


@dataclass(frozen=True)
class Push:
    ref: str  # refs/heads/<branch> or refs/tags/<tag>
    before: str
    after: str
    repository: str  # owner/name as the payload names it
    sender: str
    compare_url: str

    @property
    def branch(self) -> str | None:
        return self.ref.removeprefix("refs/heads/") if self.ref.startswith("refs/heads/") else None

    @property
    def tag(self) -> str | None:
        return self.ref.removeprefix("refs/tags/") if self.ref.startswith("refs/tags/") else None


@dataclass(frozen=True)
class PullRequest:
    action: str
    number: int
    head_sha: str
    head_ref: str
    head_repository: str
    base_ref: str
    repository: str
    url: str
    title: str
    sender: str

    @property
    def from_fork(self) -> bool:
        return self.head_repository.lower() != self.repository.lower()


def _text(value: Any, max_chars: int = REF_MAX) -> str:
    return value[:max_chars] if isinstance(value, str) else ""


def _get(payload: Any, *path: str) -> Any:
    for key in path:
        payload = payload.get(key) if isinstance(payload, dict) else None
    return payload


def read_push(payload: Any) -> Push | None:
    """None for a payload that is not a push Terrace can act on (a deletion, a malformed one)."""
    after, before = _text(_get(payload, "after")), _text(_get(payload, "before"))
    ref = _text(_get(payload, "ref"))
    if not SHA_RE.match(after) or after == ZERO_SHA or not ref.startswith(("refs/heads/", "refs/tags/")):
        return None
    repository, sender = _text(_get(payload, "repository", "full_name")), _text(_get(payload, "sender", "login"))
    before = before if SHA_RE.match(before) else ZERO_SHA
    return Push(ref, before, after, repository, sender, _text(_get(payload, "compare"), 2048))


def read_pull_request(payload: Any) -> PullRequest | None:
    pr = _get(payload, "pull_request")
    number = _get(payload, "number") or _get(pr, "number")
    head_sha = _text(_get(pr, "head", "sha"))
    if not isinstance(number, int) or isinstance(number, bool) or not 0 < number < 2**31 or not SHA_RE.match(head_sha):
        return None
    return PullRequest(
        action=_text(_get(payload, "action"), 64), number=number, head_sha=head_sha,
        head_ref=_text(_get(pr, "head", "ref")), head_repository=_text(_get(pr, "head", "repo", "full_name")),
        base_ref=_text(_get(pr, "base", "ref")), repository=_text(_get(payload, "repository", "full_name")),
        url=_text(_get(pr, "html_url"), 2048), title=_text(_get(pr, "title"), 1024),
        sender=_text(_get(payload, "sender", "login")),
    )  # fmt: skip


def delivery_cv_id(workspace_id: str, delivery: str) -> str:
    """The configuration version a delivery makes in a workspace: derived from both, so the events queue's second
    delivery of the same work finds the version the first one made and queues no second run."""
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    digest = int.from_bytes(hashlib.sha256(f"{workspace_id}#{delivery}".encode()).digest(), "big")
    chars = []
    for _ in range(16):
        digest, index = divmod(digest, len(alphabet))
        chars.append(alphabet[index])
    return "cv-" + "".join(chars)


def skipped(message: str) -> bool:
    """`[ci skip]` or `[skip ci]` in the commit message (HCP Terraform's markers)."""
    lowered = message.lower()
    return any(marker in lowered for marker in SKIP_MARKERS)


def tag_matches(tags_regex: str | None, tag: str, timeout_s: float = TAG_MATCH_TIMEOUT_S) -> bool:
    """Whether the workspace's `tags-regex` matches `tag` (`tenant_regex.py`: compiled within bounds, matched with
    a timeout); PatternTimedOut when it ran past `timeout_s`."""
    if not tags_regex or len(tag) > TAG_MATCH_MAX:
        return False
    try:
        return tenant_regex.search(str(tags_regex), tag, timeout_s)
    except tenant_regex.PatternRefused:
        return False  # saved before patterns were bounded: it matches nothing


def _glob(pattern: str) -> re.Pattern[str]:
    """A trigger pattern (HCP's glob: `**` any folders, `*` within one, `?` one character; `/` = the root)."""
    pattern = re.sub(r"\*{3,}", "**", re.sub(r"(\*\*/)+", "**/", pattern.lstrip("/")))  # no stacked wildcards
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def triggered(files: list[str] | None, working_directory: str, prefixes: Any, patterns: Any) -> bool:
    """Whether a change of `files` starts a run of a workspace whose file triggers are on: with trigger patterns,
    a file matching one; else a file under the working directory or a trigger prefix (the root: any file). `None`
    (the forge could not list them) starts one."""
    if files is None:
        return True
    names = [posixpath.normpath(f.lstrip("/")) for f in files]
    if isinstance(patterns, list) and patterns:
        compiled = [_glob(p) for p in patterns if isinstance(p, str) and p]
        return any(c.match(name) for c in compiled for name in names)
    folders = [working_directory.strip("/")] + [p.strip("/") for p in (prefixes or []) if isinstance(p, str)]
    if any(folder in ("", ".") for folder in folders):
        return bool(names)
    return any(name == f or name.startswith(f + "/") for f in folders for name in names)


def _link(value: Any) -> str | None:
    """A forge's URL kept only when it is one a page may link to (http or https)."""
    return value if isinstance(value, str) and value.startswith(("https://", "http://")) else None


def run_summary(ingress: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a run shows of the commit it plans (the run list and page link to the forge)."""
    if not ingress:
        return None
    return {
        "identifier": ingress.get("identifier"),
        "commit-sha": ingress.get("commit-sha"),
        "commit-url": _link(ingress.get("commit-url")),
        "branch": ingress.get("branch"),
        "tag": ingress.get("tag"),
        "pull-request-number": ingress.get("pull-request-number"),
        "pull-request-url": _link(ingress.get("pull-request-url")),
        "sender-username": ingress.get("sender-username"),
    }
