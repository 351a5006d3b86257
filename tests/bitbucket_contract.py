"""Atlassian's published descriptions of Bitbucket, as the Bitbucket twins (`bitbucket_twin.py`) hold Terrace to
them. Transcribed, not copied: only the calls Terrace makes and the members it reads or sends, checked with
jsonschema.

- Bitbucket Cloud: its OpenAPI document (`https://api.bitbucket.org/swagger.v3.json`, "Bitbucket API" 2.0): the
  paths `/repositories/{workspace}/{repo_slug}`, `.../hooks` (POST, body `webhook_subscription`: `url`,
  `description`, `active`, `secret`, `events`), `.../hooks/{uid}` (DELETE), `.../commit/{commit}`,
  `.../commit/{commit}/statuses/build` (POST, body `commitstatus`: `key`, `state` one of INPROGRESS, SUCCESSFUL,
  FAILED, STOPPED, `name`, `url`, `description`, `refname`), `.../diffstat/{spec}` (query `ignore_whitespace`,
  `merge`, `path`, `renames`, `topic`, and the paging `page`, `pagelen`), `.../pullrequests/{pull_request_id}`,
  `.../pullrequests/{pull_request_id}/comments` (POST) and `.../comments/{comment_id}` (PUT), body
  `pullrequest_comment`: `content.raw` (Markdown), `inline`, `parent`;
  the archive `https://bitbucket.org/{workspace}/{repo_slug}/get/{revision}.tar.gz` is a web route, not in it.
  Webhook payloads: "Event payloads" (support.atlassian.com, Bitbucket Cloud): `repo:push`, `pullrequest:created`,
  `pullrequest:updated`; headers `X-Event-Key`, `X-Request-UUID`, `X-Hook-UUID`, `X-Hub-Signature`.
- Bitbucket Data Center: its REST API reference (developer.atlassian.com, "Bitbucket Data Center REST API" 8.x):
  `/rest/api/1.0/projects/{projectKey}/repos/{repositorySlug}`, `.../default-branch`, `.../webhooks` (POST, body
  `RestWebhook`: `name`, `url`, `active`, `events`, `configuration.secret`), `.../webhooks/{webhookId}` (DELETE),
  `.../commits/{commitId}`, `.../compare/changes` (query `from`, `to`, `fromRepo`, `start`, `limit`),
  `.../pull-requests/{pullRequestId}/changes` (`sinceId`, `untilId`, `changeScope`, `withComments`, `start`,
  `limit`), `.../pull-requests/{pullRequestId}/comments` (POST, body `RestComment`: `text`, `parent`, `anchor`,
  `severity`, `state`), `.../comments/{commentId}` (GET; PUT with `text` and the `version` it replaces, a 409
  when that is not the current one), `/rest/api/latest/projects/{projectKey}/repos/{repositorySlug}/archive`
  (`at`, `filename`, `format`, `path`, `prefix`); "Build status" `/rest/build-status/1.0/commits/{commitId}`
  (POST: `state` one of SUCCESSFUL, FAILED, INPROGRESS, `key`, `name`, `url`, `description`). Webhook payloads:
  "Event payload" (confluence.atlassian.com, Bitbucket Server): `repo:refs_changed`, `pr:opened`,
  `pr:from_ref_updated`; headers `X-Event-Key`, `X-Request-Id`, `X-Hub-Signature`.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema

CLOUD_STATES = ["INPROGRESS", "SUCCESSFUL", "FAILED", "STOPPED"]
SERVER_STATES = ["SUCCESSFUL", "FAILED", "INPROGRESS"]
CLOUD_EVENTS = [
    "repo:push",
    "pullrequest:created",
    "pullrequest:updated",
    "pullrequest:fulfilled",
    "pullrequest:rejected",
    "repo:fork",
    "repo:updated",
    "repo:commit_status_created",
]  # a few of them
SERVER_EVENTS = ["repo:refs_changed", "repo:modified", "pr:opened", "pr:from_ref_updated", "pr:modified",
                 "pr:merged", "pr:declined", "pr:deleted"]  # fmt: skip

_STR, _BOOL = {"type": "string"}, {"type": "boolean"}
CLOUD_REPO = r"/repositories/(?P<workspace>[^/]+)/(?P<repo_slug>[^/]+)"
SERVER_REPO = r"/rest/api/(?:1\.0|latest)/projects/(?P<projectKey>[^/]+)/repos/(?P<repositorySlug>[^/]+)"
PAGING = {"page", "pagelen"}

Call = tuple[str, str, set[str], set[str], dict[str, Any] | None]
_CLOUD_COMMENT = {"type": "object", "required": ["content"], "additionalProperties": False, "properties": {
    "content": {"type": "object", "required": ["raw"], "additionalProperties": False,
                "properties": {"raw": {"type": "string", "minLength": 1}}},
    "inline": {"type": "object"}, "parent": {"type": "object"}}}  # fmt: skip
_SERVER_COMMENT = {"type": "object", "required": ["text"], "additionalProperties": False, "properties": {
    "text": {"type": "string", "minLength": 1}, "version": {"type": "integer", "minimum": 0},
    "parent": {"type": "object"}, "anchor": {"type": "object"}, "severity": {"enum": ["NORMAL", "BLOCKER"]},
    "state": {"enum": ["OPEN", "PENDING", "RESOLVED"]}}}  # fmt: skip
CLOUD_CALLS: tuple[Call, ...] = (
    ("GET", CLOUD_REPO, set(), set(), None),
    ("POST", CLOUD_REPO + "/hooks", set(), set(), {
        "type": "object", "required": ["url", "events"], "additionalProperties": False,
        "properties": {"url": _STR, "description": _STR, "active": _BOOL, "secret": _STR,
                       "events": {"type": "array", "minItems": 1, "items": {"enum": CLOUD_EVENTS}}}}),
    ("DELETE", CLOUD_REPO + r"/hooks/(?P<uid>[^/]+)", set(), set(), None),
    ("GET", CLOUD_REPO + r"/commit/(?P<commit>[^/]+)", set(), set(), None),
    ("POST", CLOUD_REPO + r"/commit/(?P<commit>[0-9a-f]{40})/statuses/build", set(), set(), {
        "type": "object", "required": ["key", "state", "url"], "additionalProperties": False,
        "properties": {"key": {"type": "string", "maxLength": 40}, "state": {"enum": CLOUD_STATES}, "name": _STR,
                       "url": _STR, "description": _STR, "refname": _STR}}),
    ("GET", CLOUD_REPO + r"/diffstat/(?P<spec>[^/]+)", {"ignore_whitespace", "merge", "path", "renames", "topic"}
     | PAGING, set(), None),
    ("GET", CLOUD_REPO + r"/pullrequests/(?P<pull_request_id>\d+)", set(), set(), None),
    ("POST", CLOUD_REPO + r"/pullrequests/(?P<pull_request_id>\d+)/comments", set(), set(), _CLOUD_COMMENT),
    ("PUT", CLOUD_REPO + r"/pullrequests/(?P<pull_request_id>\d+)/comments/(?P<comment_id>\d+)", set(), set(),
     _CLOUD_COMMENT),
)  # fmt: skip
SERVER_CALLS: tuple[Call, ...] = (
    ("GET", SERVER_REPO, set(), set(), None),
    ("GET", SERVER_REPO + "/default-branch", set(), set(), None),
    ("POST", SERVER_REPO + "/webhooks", set(), set(), {
        "type": "object", "required": ["name", "url", "events"], "additionalProperties": False,
        "properties": {"name": _STR, "url": _STR, "active": _BOOL,
                       "events": {"type": "array", "minItems": 1, "items": {"enum": SERVER_EVENTS}},
                       "configuration": {"type": "object", "additionalProperties": _STR},
                       "sslVerificationRequired": _BOOL}}),
    ("DELETE", SERVER_REPO + r"/webhooks/(?P<webhookId>\d+)", set(), set(), None),
    ("GET", SERVER_REPO + r"/commits/(?P<commitId>[^/]+)", {"path"}, set(), None),
    ("GET", SERVER_REPO + "/compare/changes", {"from", "to", "fromRepo", "start", "limit"}, {"from", "to"}, None),
    ("GET", SERVER_REPO + r"/pull-requests/(?P<pullRequestId>\d+)/changes",
     {"sinceId", "untilId", "changeScope", "withComments", "start", "limit"}, set(), None),
    ("GET", SERVER_REPO + "/archive", {"at", "filename", "format", "path", "prefix"}, set(), None),
    ("POST", r"/rest/build-status/1\.0/commits/(?P<commitId>[0-9a-f]{40})", set(), set(), {
        "type": "object", "required": ["state", "key", "url"], "additionalProperties": False,
        "properties": {"state": {"enum": SERVER_STATES}, "key": {"type": "string", "maxLength": 255}, "name": _STR,
                       "url": _STR, "description": _STR}}),
    ("POST", SERVER_REPO + r"/pull-requests/(?P<pullRequestId>\d+)/comments", set(), set(), _SERVER_COMMENT),
    ("GET", SERVER_REPO + r"/pull-requests/(?P<pullRequestId>\d+)/comments/(?P<commentId>\d+)", set(), set(), None),
    ("PUT", SERVER_REPO + r"/pull-requests/(?P<pullRequestId>\d+)/comments/(?P<commentId>\d+)", set(), set(),
     {**_SERVER_COMMENT, "required": ["text", "version"]}),
)  # fmt: skip


def check_request(
    calls: tuple[Call, ...], method: str, raw_path: str, query: dict[str, str], body: Any
) -> tuple[list[str], dict[str, str]]:
    """(problems, the path's named parts) of a request relative to the api-url."""
    for call_method, pattern, allowed, required, schema in calls:
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
            problems.append(f"{method} {raw_path}: Bitbucket takes no body here")
        if "/latest/" in raw_path and not raw_path.endswith("/archive"):
            problems.append(f"{method} {raw_path}: the REST API 1.0, not latest, except the archive")
        return problems, m.groupdict()
    return [f"{method} {raw_path} is not a call Terrace may make to Bitbucket"], {}


_HASH = {"type": "string", "pattern": "^[0-9a-f]{40}$"}
_SHORT = {"type": "string", "pattern": "^[0-9a-f]{12}$"}  # Bitbucket Cloud's pull request payloads
_HREF = {"type": "object", "required": ["href"], "properties": {"href": _STR}}
_ACCOUNT = {"type": "object", "required": ["type", "uuid", "display_name", "links"]}
_CLOUD_REPO = {"type": "object", "required": ["type", "uuid", "full_name", "name", "links"],
               "properties": {"type": {"const": "repository"}, "full_name": _STR}}  # fmt: skip
_REF = {
    "type": ["object", "null"],
    "required": ["type", "name", "target"],
    "properties": {
        "type": {"enum": ["branch", "tag", "named_branch", "bookmark"]},
        "target": {"type": "object", "required": ["type", "hash"], "properties": {"hash": _HASH}},
    },
}
_ENDPOINT = {"type": "object", "required": ["branch", "commit", "repository"],
             "properties": {"branch": {"type": "object", "required": ["name"]},
                            "commit": {"type": "object", "required": ["hash"], "properties": {"hash": _SHORT}},
                            "repository": _CLOUD_REPO}}  # fmt: skip
_PULLREQUEST = {
    "type": "object",
    "required": [
        "id",
        "title",
        "state",
        "author",
        "source",
        "destination",
        "links",
        "created_on",
        "updated_on",
        "participants",
        "reviewers",
        "close_source_branch",
    ],
    "properties": {
        "id": {"type": "integer"},
        "state": {"enum": ["OPEN", "MERGED", "DECLINED", "SUPERSEDED"]},
        "source": _ENDPOINT,
        "destination": _ENDPOINT,
        "links": {"type": "object", "required": ["html"], "properties": {"html": _HREF}},
    },
}
_SERVER_PROJECT = {"type": "object", "required": ["key", "id", "name"]}
_SERVER_REPO = {
    "type": "object",
    "required": ["slug", "id", "name", "project", "scmId", "state", "forkable"],
    "properties": {"project": _SERVER_PROJECT},
}
_SERVER_USER = {"type": "object", "required": ["name", "emailAddress", "id", "displayName", "slug", "type"]}
_SERVER_REF = {
    "type": "object",
    "required": ["id", "displayId", "latestCommit", "repository"],
    "properties": {"latestCommit": _HASH, "repository": _SERVER_REPO},
}
_SERVER_PR = {
    "type": "object",
    "required": [
        "id",
        "version",
        "title",
        "state",
        "open",
        "closed",
        "createdDate",
        "updatedDate",
        "fromRef",
        "toRef",
        "locked",
        "author",
        "reviewers",
        "participants",
        "links",
    ],
    "properties": {
        "id": {"type": "integer"},
        "state": {"enum": ["OPEN", "MERGED", "DECLINED"]},
        "fromRef": _SERVER_REF,
        "toRef": _SERVER_REF,
    },
}
SCHEMAS: dict[str, dict[str, Any]] = {
    "repo:push": {"type": "object", "required": ["actor", "repository", "push"], "properties": {
        "actor": _ACCOUNT, "repository": _CLOUD_REPO,
        "push": {"type": "object", "required": ["changes"], "properties": {"changes": {"type": "array", "items": {
            "type": "object", "required": ["new", "old", "links", "created", "forced", "closed", "commits",
                                           "truncated"],
            "properties": {"new": _REF, "old": _REF}}}}}}},
    "pullrequest:created": {"type": "object", "required": ["actor", "pullrequest", "repository"],
                            "properties": {"actor": _ACCOUNT, "pullrequest": _PULLREQUEST,
                                           "repository": _CLOUD_REPO}},
    "repo:refs_changed": {"type": "object", "required": ["eventKey", "date", "actor", "repository", "changes"],
                          "properties": {"eventKey": {"const": "repo:refs_changed"}, "actor": _SERVER_USER,
                                         "repository": _SERVER_REPO, "changes": {"type": "array", "items": {
                                             "type": "object",
                                             "required": ["ref", "refId", "fromHash", "toHash", "type"],
                                             "properties": {"fromHash": _HASH, "toHash": _HASH,
                                                            "type": {"enum": ["ADD", "UPDATE", "DELETE"]},
                                                            "ref": {"type": "object",
                                                                    "required": ["id", "displayId", "type"]}}}}}},
    "pr:opened": {"type": "object", "required": ["eventKey", "date", "actor", "pullRequest"],
                  "properties": {"actor": _SERVER_USER, "pullRequest": _SERVER_PR}},
}  # fmt: skip
SCHEMAS["pullrequest:updated"] = SCHEMAS["pullrequest:created"]
SCHEMAS["pr:from_ref_updated"] = {**SCHEMAS["pr:opened"],
                                  "required": [*SCHEMAS["pr:opened"]["required"], "previousFromHash"]}  # fmt: skip


def payload(event: str, values: dict[str, Any]) -> dict[str, Any]:
    errors = [e.message for e in jsonschema.Draft7Validator(SCHEMAS[event]).iter_errors(values)]
    if errors:
        raise AssertionError(f"not a Bitbucket {event} payload: {errors}")
    return values
