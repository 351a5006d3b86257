"""Microsoft's published descriptions of Azure DevOps Services, as the Azure DevOps twin (`azure_twin.py`) holds
Terrace to them. The REST API's OpenAPI documents are in the public repository MicrosoftDocs/vsts-rest-api-specs
(`specification/git/7.1/git.json`, 530 KB, and `specification/hooks/7.1/serviceHooks.json`): too large to keep
here, so the operations Terrace calls are excerpted below (their paths, query parameters and the members of the
bodies it sends, with the enums as published), and `published_problems()` checks the excerpts against those
documents when a copy of the repository is at hand (`VSTS_REST_API_SPECS`, default the fetched mirror; the test
that calls it skips without one). The service hook payloads (`git.push`, `git.pullrequest.created`,
`git.pullrequest.updated`) are transcribed from "Service hooks event reference" (learn.microsoft.com).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema

SPECS = Path(os.environ.get("VSTS_REST_API_SPECS", "/work/.mirror/MicrosoftDocs+vsts-rest-api-specs/repo"))
GIT = "/{organization}/{project}/_apis/git/repositories/{repositoryId}"
HOOKS = "/{organization}/_apis/hooks/subscriptions"
STATES = ["notSet", "pending", "succeeded", "failed", "error", "notApplicable"]  # GitStatusState
_STR, _OBJ = {"type": "string"}, {"type": "object", "additionalProperties": {"type": "string"}}

_STATUS: dict[str, Any] = {  # GitStatus (GitPullRequestStatus adds iterationId)
    "type": "object", "required": ["state", "context"], "additionalProperties": False,
    "properties": {"state": {"enum": STATES}, "description": _STR, "targetUrl": _STR,
                   "context": {"type": "object", "required": ["name"], "additionalProperties": False,
                               "properties": {"genre": _STR, "name": {"type": "string", "minLength": 1}}}},
}  # fmt: skip
THREAD_STATES = ["unknown", "active", "fixed", "wontFix", "closed", "byDesign", "pending"]  # CommentThreadStatus
COMMENT_TYPES = ["unknown", "text", "codeChange", "system"]  # CommentType
_COMMENT: dict[str, Any] = {  # Comment (what a client may set of it)
    "type": "object", "required": ["content"], "additionalProperties": False,
    "properties": {"content": {"type": "string", "minLength": 1}, "parentCommentId": {"type": "integer"},
                   "commentType": {"enum": COMMENT_TYPES}},
}  # fmt: skip
_THREAD: dict[str, Any] = {  # GitPullRequestCommentThread (allOf CommentThread)
    "type": "object", "required": ["comments"], "additionalProperties": False,
    "properties": {"comments": {"type": "array", "minItems": 1, "items": _COMMENT}, "status": {"enum": THREAD_STATES},
                   "properties": {"type": "object"}},
}  # fmt: skip
# (method, the published path, its query parameters, the body's schema): git.json 7.1 and serviceHooks.json 7.1
CALLS: tuple[tuple[str, str, set[str], dict[str, Any] | None], ...] = (
    ("get", GIT, {"api-version"}, None),
    ("get", GIT + "/refs", {"filter", "includeLinks", "includeStatuses", "includeMyBranches", "latestStatusesOnly",
                            "peelTags", "filterContains", "$top", "continuationToken", "api-version"}, None),
    ("get", GIT + "/commits/{commitId}", {"changeCount", "api-version"}, None),
    ("get", GIT + "/diffs/commits", {"diffCommonCommit", "$top", "$skip", "baseVersion", "baseVersionOptions",
                                     "baseVersionType", "targetVersion", "targetVersionOptions", "targetVersionType",
                                     "api-version"}, None),
    ("get", GIT + "/pullrequests/{pullRequestId}", {"maxCommentLength", "$skip", "$top", "includeCommits",
                                                    "includeWorkItemRefs", "api-version"}, None),
    ("get", GIT + "/items", {"scopePath", "recursionLevel", "includeContentMetadata", "latestProcessedChange",
                             "download", "includeLinks", "$format", "versionDescriptor.version",
                             "versionDescriptor.versionOptions", "versionDescriptor.versionType", "zipForUnix",
                             "api-version"}, None),
    ("post", GIT + "/commits/{commitId}/statuses", {"api-version"}, _STATUS),
    ("post", GIT + "/pullRequests/{pullRequestId}/statuses", {"api-version"},
     {**_STATUS, "properties": {**_STATUS["properties"], "iterationId": {"type": "integer"}}}),
    ("post", GIT + "/pullRequests/{pullRequestId}/threads", {"api-version"}, _THREAD),
    ("patch", GIT + "/pullRequests/{pullRequestId}/threads/{threadId}/comments/{commentId}", {"api-version"},
     _COMMENT),
    ("post", HOOKS, {"api-version"}, {
        "type": "object", "additionalProperties": False,
        "required": ["publisherId", "eventType", "consumerId", "consumerActionId", "publisherInputs",
                     "consumerInputs"],
        "properties": {"publisherId": {"const": "tfs"}, "resourceVersion": _STR,
                       "eventType": {"enum": ["git.push", "git.pullrequest.created", "git.pullrequest.updated",
                                              "git.pullrequest.merged"]},
                       "consumerId": {"const": "webHooks"}, "consumerActionId": {"const": "httpRequest"},
                       "publisherInputs": _OBJ, "consumerInputs": {**_OBJ, "required": ["url"]}}}),
    ("delete", HOOKS + "/{subscriptionId}", {"api-version"}, None),
)  # fmt: skip
BODY_MEMBERS = {"GitStatus": {"state", "description", "targetUrl", "context"}, "GitStatusContext": {"genre", "name"},
                "CommentThread": {"comments", "status", "properties"},
                "Comment": {"content", "parentCommentId", "commentType"},
                "Subscription": {"publisherId", "eventType", "resourceVersion", "consumerId", "consumerActionId",
                                 "publisherInputs", "consumerInputs"}}  # fmt: skip


def _pattern(template: str) -> str:
    return "^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template)) + "$"


def check_request(method: str, path: str, query: dict[str, str], body: Any) -> tuple[list[str], dict[str, str]]:
    """(problems, the path's named parts) of a request relative to the api-url (`https://dev.azure.com`)."""
    for call_method, template, allowed, schema in CALLS:
        m = re.match(_pattern(template), path)
        if call_method != method.lower() or m is None:
            continue
        problems = [f"{method} {path}: unknown query parameter {k}" for k in query if k not in allowed]
        if query.get("api-version") != "7.1":
            problems.append(f"{method} {path}: api-version 7.1 is required")
        if schema is not None:
            problems += [f"{method} {path}: {e.message}" for e in jsonschema.Draft7Validator(schema).iter_errors(body)]
        elif body not in (None, b"", {}):
            problems.append(f"{method} {path}: Azure DevOps takes no body here")
        return problems, m.groupdict()
    return [f"{method} {path} is not a call Terrace may make to Azure DevOps"], {}


def _published(name: str) -> dict[str, Any] | None:
    try:
        text = subprocess.run(["git", "show", f"HEAD:specification/{name}"], cwd=SPECS, capture_output=True,
                              timeout=30, check=True).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return dict(json.loads(text.decode("utf-8-sig")))


def published_problems() -> list[str] | None:
    """Where the excerpts differ from the published documents (None: no copy of them here)."""
    git, hooks = _published("git/7.1/git.json"), _published("hooks/7.1/serviceHooks.json")
    if git is None or hooks is None:
        return None
    problems = []
    for method, template, allowed, _ in CALLS:
        doc = hooks if template.startswith(HOOKS) else git
        operation = doc["paths"].get(template, {}).get(method)
        if operation is None:
            problems.append(f"{method} {template} is not published")
            continue
        params = [doc["parameters"][p["$ref"].split("/")[-1]] if "$ref" in p else p for p in operation["parameters"]]
        published = {p["name"] for p in params if p["in"] == "query"}
        problems += [f"{method} {template}: {q} is not a published parameter" for q in allowed - published]
    for name, members in BODY_MEMBERS.items():
        doc = hooks if name == "Subscription" else git
        problems += [f"{name}.{m} is not published" for m in members - set(doc["definitions"][name]["properties"])]
    if git["definitions"]["GitStatus"]["properties"]["state"]["enum"] != STATES:
        problems.append("GitStatusState differs")
    if git["definitions"]["CommentThread"]["properties"]["status"]["enum"] != THREAD_STATES:
        problems.append("CommentThreadStatus differs")
    if git["definitions"]["Comment"]["properties"]["commentType"]["enum"] != COMMENT_TYPES:
        problems.append("CommentType differs")
    return problems


_SHA = {"type": "string", "pattern": "^[0-9a-f]{40}$"}
_IDENTITY = {"type": "object", "required": ["id", "displayName", "uniqueName"]}
_REPOSITORY = {
    "type": "object",
    "required": ["id", "name", "url", "project", "remoteUrl"],
    "properties": {"project": {"type": "object", "required": ["id", "name", "url", "state"]}},
}
_COMMIT_REF = {"type": "object", "required": ["commitId", "url"], "properties": {"commitId": _SHA}}
_ENVELOPE = [
    "subscriptionId",
    "notificationId",
    "id",
    "eventType",
    "publisherId",
    "message",
    "detailedMessage",
    "resource",
    "resourceVersion",
    "resourceContainers",
    "createdDate",
]
_PR = {
    "type": "object",
    "required": _ENVELOPE,
    "properties": {
        "resource": {
            "type": "object",
            "required": [
                "repository",
                "pullRequestId",
                "status",
                "createdBy",
                "creationDate",
                "title",
                "sourceRefName",
                "targetRefName",
                "mergeStatus",
                "lastMergeSourceCommit",
                "lastMergeTargetCommit",
                "url",
            ],
            "properties": {
                "repository": _REPOSITORY,
                "pullRequestId": {"type": "integer"},
                "createdBy": _IDENTITY,
                "status": {"enum": ["active", "abandoned", "completed"]},
                "lastMergeSourceCommit": _COMMIT_REF,
                "lastMergeTargetCommit": _COMMIT_REF,
            },
        }
    },
}
SCHEMAS: dict[str, dict[str, Any]] = {
    "git.push": {"type": "object", "required": _ENVELOPE, "properties": {
        "eventType": {"const": "git.push"}, "resource": {
            "type": "object", "required": ["commits", "refUpdates", "repository", "pushedBy", "pushId", "date", "url"],
            "properties": {"repository": _REPOSITORY, "pushedBy": _IDENTITY, "refUpdates": {"type": "array", "items": {
                "type": "object", "required": ["name", "oldObjectId", "newObjectId"],
                "properties": {"oldObjectId": _SHA, "newObjectId": _SHA}}}}}}},
    "git.pullrequest.created": _PR,
    "git.pullrequest.updated": _PR,
}  # fmt: skip


def payload(event: str, values: dict[str, Any]) -> dict[str, Any]:
    errors = [e.message for e in jsonschema.Draft7Validator(SCHEMAS[event]).iter_errors(values)]
    if errors:
        raise AssertionError(f"not an Azure DevOps {event} payload: {errors}")
    return values
