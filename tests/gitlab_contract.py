"""GitLab's documented REST API v4 and webhook payloads, as the GitLab twin (`gitlab_twin.py`) holds Terrace to them.
GitLab publishes no machine-readable description of either, so the shapes are transcribed here from its reference
pages (docs.gitlab.com: REST API "Projects", "Project webhooks", "Commits", "Repositories", "Merge requests",
"Commit statuses", "Notes"; "Webhook events": push, tag push, merge request) and checked with jsonschema:

- `check_request(method, raw_path, query, body)`: the problems of a request relative to the api-url (`/api/v4`):
  one of the calls Terrace may make, the project named by its URL-encoded path, query parameters the call documents
  (its required ones present), a JSON body with documented attributes of the documented types.
- `payload(event, values)`: a delivery's payload with every member GitLab's documented example carries, validated.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema

PROJECT = r"/projects/(?P<id>[^/]+)"  # the project's URL-encoded path (`group%2Fproject`): never a bare slash
STATES = ["pending", "running", "success", "failed", "canceled", "skipped"]

_BOOL, _STR, _INT = {"type": "boolean"}, {"type": "string"}, {"type": "integer"}
# (method, path pattern, query parameters allowed, query required, body schema or None)
CALLS: tuple[tuple[str, str, set[str], set[str], dict[str, Any] | None], ...] = (
    ("GET", PROJECT, {"license", "statistics", "with_custom_attributes"}, set(), None),
    ("POST", PROJECT + "/hooks", set(), set(), {
        "type": "object", "required": ["url"], "additionalProperties": False,
        "properties": {"url": _STR, "token": _STR, "name": _STR, "description": _STR,
                       "push_events": _BOOL, "push_events_branch_filter": _STR, "branch_filter_strategy": _STR,
                       "tag_push_events": _BOOL, "merge_requests_events": _BOOL, "enable_ssl_verification": _BOOL,
                       "issues_events": _BOOL, "confidential_issues_events": _BOOL, "note_events": _BOOL,
                       "confidential_note_events": _BOOL, "job_events": _BOOL, "pipeline_events": _BOOL,
                       "wiki_page_events": _BOOL, "deployment_events": _BOOL, "releases_events": _BOOL,
                       "custom_webhook_template": _STR}}),
    ("DELETE", PROJECT + r"/hooks/(?P<hook>\d+)", set(), set(), None),
    ("GET", PROJECT + r"/repository/commits/(?P<sha>[^/]+)", {"stats"}, set(), None),
    ("GET", PROJECT + r"/repository/archive\.tar\.gz", {"sha", "path", "include_lfs_blobs", "exclude_paths"}, set(),
     None),
    ("GET", PROJECT + r"/repository/compare", {"from", "to", "from_project_id", "straight", "unidiff"},
     {"from", "to"}, None),
    ("GET", PROJECT + r"/merge_requests/(?P<iid>\d+)/diffs", {"page", "per_page", "unidiff"}, set(), None),
    ("POST", PROJECT + r"/statuses/(?P<sha>[0-9a-f]{40})", set(), set(), {
        "type": "object", "required": ["state"], "additionalProperties": False,
        "properties": {"state": {"enum": STATES}, "ref": _STR, "name": _STR, "context": _STR,
                       "target_url": _STR, "description": _STR, "coverage": {"type": "number"},
                       "pipeline_id": _INT}}),
    ("POST", PROJECT + r"/merge_requests/(?P<iid>\d+)/notes", set(), set(), {
        "type": "object", "required": ["body"], "additionalProperties": False,
        "properties": {"body": {"type": "string", "maxLength": 1_000_000}, "internal": _BOOL, "created_at": _STR,
                       "merge_request_diff_head_sha": _STR}}),
    ("PUT", PROJECT + r"/merge_requests/(?P<iid>\d+)/notes/(?P<note>\d+)", set(), set(), {
        "type": "object", "required": ["body"], "additionalProperties": False,
        "properties": {"body": {"type": "string", "maxLength": 1_000_000}, "confidential": _BOOL}}),
)  # fmt: skip


def check_request(method: str, raw_path: str, query: dict[str, str], body: Any) -> tuple[list[str], dict[str, str]]:
    """(problems, the path's named parts)."""
    for call_method, pattern, allowed, required, schema in CALLS:
        m = re.fullmatch(pattern, raw_path)
        if call_method != method or m is None:
            continue
        problems = [f"{method} {raw_path}: unknown query parameter {k}" for k in query if k not in allowed]
        problems += [f"{method} {raw_path}: query parameter {k} is required" for k in required if k not in query]
        if schema is not None:
            problems += [
                f"{method} {raw_path}: {e.message}" for e in jsonschema.Draft7Validator(schema).iter_errors(body)
            ]
        elif body not in (None, b"", {}):
            problems.append(f"{method} {raw_path}: GitLab takes no body here")
        return problems, m.groupdict()
    return [f"{method} {raw_path} is not a call Terrace may make to GitLab"], {}


_USER = {"type": "object", "required": ["id", "name", "username", "avatar_url"]}
_PROJECT = {"type": "object", "required": ["id", "name", "web_url", "git_http_url", "namespace",
                                           "path_with_namespace", "default_branch", "visibility_level"]}  # fmt: skip
_COMMIT = {"type": "object", "required": ["id", "message", "title", "timestamp", "url", "author"]}
_SHA = {"type": "string", "pattern": "^[0-9a-f]{40}$"}
_PUSH = {
    "type": "object",
    "required": ["object_kind", "event_name", "before", "after", "ref", "ref_protected", "checkout_sha", "user_id",
                 "user_name", "user_username", "user_email", "user_avatar", "project_id", "project", "commits",
                 "total_commits_count", "repository"],
    "properties": {"before": _SHA, "after": _SHA, "ref": {"type": "string", "pattern": "^refs/(heads|tags)/"},
                   "project": _PROJECT, "commits": {"type": "array", "items": _COMMIT},
                   "total_commits_count": _INT, "user_username": _STR},
}  # fmt: skip
SCHEMAS: dict[str, dict[str, Any]] = {
    "push": {**_PUSH, "properties": {**_PUSH["properties"], "object_kind": {"const": "push"}}},
    "tag_push": {**_PUSH, "properties": {**_PUSH["properties"], "object_kind": {"const": "tag_push"}}},
    "merge_request": {
        "type": "object",
        "required": [
            "object_kind",
            "event_type",
            "user",
            "project",
            "object_attributes",
            "labels",
            "changes",
            "repository",
        ],
        "properties": {
            "object_kind": {"const": "merge_request"},
            "user": _USER,
            "project": _PROJECT,
            "object_attributes": {
                "type": "object",
                "required": [
                    "id",
                    "iid",
                    "target_branch",
                    "source_branch",
                    "source_project_id",
                    "target_project_id",
                    "title",
                    "state",
                    "action",
                    "url",
                    "source",
                    "target",
                    "last_commit",
                    "author_id",
                ],
                "properties": {
                    "iid": _INT,
                    "source_project_id": _INT,
                    "target_project_id": _INT,
                    "action": {
                        "enum": [
                            "open",
                            "close",
                            "reopen",
                            "update",
                            "approved",
                            "unapproved",
                            "approval",
                            "unapproval",
                            "merge",
                        ]
                    },
                    "oldrev": _SHA,
                    "source": _PROJECT,
                    "target": _PROJECT,
                    "last_commit": _COMMIT,
                },
            },
        },
    },  # fmt: skip
}
EVENT_HEADERS = {"push": "Push Hook", "tag_push": "Tag Push Hook", "merge_request": "Merge Request Hook"}


def payload(event: str, values: dict[str, Any]) -> dict[str, Any]:
    errors = [e.message for e in jsonschema.Draft7Validator(SCHEMAS[event]).iter_errors(values)]
    if errors:
        raise AssertionError(f"not a GitLab {event} payload: {errors}")
    return values
