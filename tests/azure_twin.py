"""An Azure DevOps Services twin for the tests: the GitHub twin's real git repositories (`forge_twin.py`: bare
repositories served over git's smart HTTP protocol by `git http-backend`, pushed to with `git`; a repository is
named `<organization>/<project>/_git/<name>`) behind the REST calls Terrace makes (api-url
`http://127.0.0.1:<port>`, as `https://dev.azure.com`; a personal access token as basic authentication; the items
zip by `git archive --format=zip`), and service hook deliveries as Azure DevOps sends them: one per subscription of
the event's type, with the subscription's basic authentication. Every request is checked against Microsoft's
published REST specification and every payload against its documented events (`azure_contract.py`): a request that
is not one of the calls, or has an unknown parameter or a body Azure DevOps would refuse, is answered 400 and
recorded in `problems`, which a test asserts empty."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from azure_contract import check_request, payload
from forge_twin import ForgeTwin
from git_forge import ZERO, Repo, git

OK = {"Content-Type": "application/json"}
Answer = tuple[int, dict[str, str], bytes]


def _json(status: int, value: Any) -> Answer:
    return status, OK, json.dumps(value).encode()


def _guid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


class AzureDevOpsTwin(ForgeTwin):
    def __enter__(self) -> AzureDevOpsTwin:
        super().__enter__()
        self.api_url = self.http_url
        self.subscriptions: dict[str, tuple[str, str]] = {}  # id -> (repository, event type)
        self.pull_statuses: list[tuple[int, dict[str, Any]]] = []  # (pull request, body)
        return self

    def _by_id(self, repository_id: str) -> Repo | None:
        return next((r for r in self.repos.values() if _guid(r.full_name) == repository_id), None)

    # deliveries --------------------------------------------------------------------------
    def deliveries(
        self, full_name: str, event: str, body: dict[str, Any], password: str | None = None
    ) -> list[tuple[str, dict[str, str], bytes]]:
        """(url, headers, body) of the event to every subscription of its type on the repository."""
        out = []
        for hook_id, (url, secret) in list(self.repos[full_name].hooks.items()):
            if self.subscriptions.get(str(hook_id)) != (full_name, event):
                continue
            basic = base64.b64encode(f"terrace:{password or secret}".encode()).decode()
            sent = json.dumps({**body, "subscriptionId": str(hook_id)}).encode()
            out.append((url, {"Authorization": f"Basic {basic}", **OK}, sent))
        return out

    def _repository(self, full_name: str) -> dict[str, Any]:  # type: ignore[override]
        org, project, _, name = full_name.split("/")
        return {
            "id": _guid(full_name),
            "name": name,
            "url": f"{self.http_url}/{org}/{project}/_apis/git/repositories/{_guid(full_name)}",
            "defaultBranch": "refs/heads/main",
            "project": {
                "id": _guid(f"{org}/{project}"),
                "name": project,
                "url": f"{self.http_url}/{org}/_apis/projects/{project}",
                "state": "wellFormed",
            },
            "remoteUrl": f"https://dev.azure.com/{full_name}",
            "webUrl": f"{self.http_url}/{full_name}",
        }

    def _envelope(self, event: str, resource: dict[str, Any]) -> dict[str, Any]:
        return {"subscriptionId": "", "notificationId": 1, "id": str(uuid.uuid4()), "eventType": event,
                "publisherId": "tfs", "message": {"text": event}, "detailedMessage": {"text": event},
                "resource": resource, "resourceVersion": "1.0", "resourceContainers": {},
                "createdDate": "2026-01-01T00:00:00Z"}  # fmt: skip

    @staticmethod
    def _identity() -> dict[str, Any]:
        return {"id": _guid("octocat"), "displayName": "Octo Cat", "uniqueName": "octocat@forge.test"}

    def push_payload(self, full_name: str, ref: str, before: str, after: str) -> dict[str, Any]:
        resource = {"commits": [{"commitId": after, "comment": "change"}], "pushId": 14, "date": "2026-01-01T00:00:00Z",
                    "refUpdates": [{"name": ref, "oldObjectId": before, "newObjectId": after}],
                    "repository": self._repository(full_name), "pushedBy": self._identity(),
                    "url": f"{self.http_url}/{full_name}/pushes/14"}  # fmt: skip
        return payload("git.push", self._envelope("git.push", resource))

    def pull_request_payload(
        self, full_name: str, number: int, head: str, head_ref: str, event: str = "git.pullrequest.created",
        fork: str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        repo = self.repos[full_name]
        base = self._rev(repo, "refs/heads/main")
        repo.pulls[number] = (base, head)
        resource = {"repository": self._repository(full_name), "pullRequestId": number, "status": "active",
                    "createdBy": self._identity(), "creationDate": "2026-01-01T00:00:00Z", "title": "a change",
                    "sourceRefName": f"refs/heads/{head_ref}", "targetRefName": "refs/heads/main",
                    "mergeStatus": "succeeded", "lastMergeSourceCommit": {"commitId": head, "url": self.http_url},
                    "lastMergeTargetCommit": {"commitId": base, "url": self.http_url},
                    "url": f"{self.http_url}/{full_name}/pullrequests/{number}",
                    **({"forkSource": {"name": f"refs/heads/{head_ref}",
                                       "repository": self._repository(fork)}} if fork else {})}  # fmt: skip
        return payload(event, self._envelope(event, resource))

    # the API -----------------------------------------------------------------------------
    def _api_request(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> Any:
        if raw_path.startswith("/git/"):
            return self._git_http(method, raw_path, headers, body)
        parts = urlsplit(raw_path)
        path, query = unquote(parts.path), dict(parse_qsl(parts.query))
        with self._lock:
            self.calls.append(f"{method} {path}")
        if headers.get("Authorization") != "Basic " + base64.b64encode(f":{self.token}".encode()).decode():
            if headers.get("X-TFS-FedAuthRedirect") == "Suppress":
                return _json(401, {"message": "TF400813: The user is not authorized to access this resource."})
            return 203, {"Content-Type": "text/html"}, b"<html>Sign in</html>"  # as Azure DevOps answers
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            return self._problem(f"{method} {path}: the body is not JSON")
        problems, named = check_request(method, path, query, parsed)
        if problems:
            return (400, *self._problem("; ".join(problems))[1:])
        if "subscriptionId" in named:
            found = self.subscriptions.pop(named["subscriptionId"], None)
            if found is None:
                return _json(404, {"message": "subscription not found"})
            self.repos[found[0]].hooks.pop(named["subscriptionId"], None)  # type: ignore[call-overload]
            return 204, {}, b""
        if "repositoryId" not in named:
            return self._subscribe(parsed)
        full_name = f"{named['organization']}/{named['project']}/_git/{named['repositoryId']}"
        repo = self.repos.get(full_name) or self._by_id(named["repositoryId"])
        if repo is None:
            return _json(404, {"message": f"TF401019: The Git repository {named['repositoryId']} does not exist"})
        return self._answer(repo, method, path, query, named, parsed)

    def _subscribe(self, body: dict[str, Any]) -> Answer:
        repo = self._by_id(body["publisherInputs"].get("repository", ""))
        if repo is None:
            return _json(400, {"message": "the publisher's repository does not exist"})
        sub_id = str(uuid.uuid4())
        if body["eventType"] == "git.pullrequest.updated" and body["publisherInputs"].get("notificationType") != (
            "PushNotification"
        ):
            self._problem("a pull request's updates are subscribed to without the source branch filter")
        with self._lock:
            self.subscriptions[sub_id] = (repo.full_name, body["eventType"])
            repo.hooks[sub_id] = (body["consumerInputs"]["url"], body["consumerInputs"].get("basicAuthPassword", ""))  # type: ignore[index]
        return _json(200, {"id": sub_id, **body, "status": "enabled"})

    def _thread(self, repo: Repo, number: int, thread: str | None, comment: str | None, body: Any) -> Answer:
        """A pull request's thread of one comment made, or its comment edited (ids `<thread>:<comment>`)."""
        missing = _json(404, {"message": "TF401180: The requested pull request or comment was not found"})
        with self._lock:
            if number not in repo.pulls:
                return missing
            if thread is None:
                made, self._next_hook = self._next_hook, self._next_hook + 1
                first = {**body["comments"][0], "id": 1, "author": self._identity()}
                repo.comments[f"{made}:1"] = (number, first["content"])  # type: ignore[index]
                return _json(200, {"id": made, "status": body.get("status", "active"), "comments": [first]})
            key = f"{thread}:{comment}"
            if key not in repo.comments or repo.comments[key][0] != number:  # type: ignore[index]
                return missing
            repo.comments[key] = (number, body["content"])  # type: ignore[index]
            return _json(200, {"id": int(str(comment)), "content": body["content"], "author": self._identity()})

    def _answer(
        self, repo: Repo, method: str, path: str, query: dict[str, str], named: dict[str, str], body: Any
    ) -> Answer:
        rest = path.split("/_apis/git/repositories/", 1)[1].partition("/")[2]
        if rest == "":
            return _json(200, self._repository(repo.full_name))
        if rest == "refs":
            name = "refs/" + query.get("filter", "")
            sha = self._rev(repo, name)
            return _json(200, {"value": [{"name": name, "objectId": sha}] if sha else [], "count": 1 if sha else 0})
        if rest.startswith("pullRequests/") and "/threads" in rest:
            return self._thread(repo, int(named["pullRequestId"]), named.get("threadId"), named.get("commentId"), body)
        if rest.startswith("pullRequests/") and rest.endswith("/statuses"):
            with self._lock:
                self.pull_statuses.append((int(named["pullRequestId"]), body))
            return _json(201, {"id": len(self.pull_statuses), **body})
        if rest.endswith("/statuses"):
            with self._lock:
                repo.statuses.append((named["commitId"], body))
            return _json(201, {"id": len(repo.statuses), **body})
        if rest.startswith("commits/"):
            sha = self._rev(repo, named["commitId"])
            if not sha:
                return _json(404, {"message": "TF401175: The commit does not exist"})
            message = git("log", "-1", "--format=%B", sha, cwd=repo.bare)
            return _json(
                200,
                {
                    "commitId": sha,
                    "comment": message,
                    "remoteUrl": f"{self.http_url}/{repo.full_name}/commit/{sha}",
                    "author": {"name": "Octo Cat", "email": "octocat@forge.test"},
                },
            )
        if rest == "diffs/commits":
            base, head = self._rev(repo, query["baseVersion"]), self._rev(repo, query["targetVersion"])
            names = git("diff", "--name-only", f"{base}...{head}", cwd=repo.bare).splitlines()
            skip, top = int(query.get("$skip", 0)), int(query.get("$top", 100))
            changes = [{"item": {"path": f"/{n}", "gitObjectType": "blob"}, "changeType": "edit"}
                       for n in names[skip : skip + top]]  # fmt: skip
            return _json(200, {"allChangesIncluded": skip + top >= len(names), "changes": changes,
                               "baseCommit": base, "targetCommit": head, "commonCommit": base})  # fmt: skip
        if rest.startswith("pullrequests/"):
            if int(named["pullRequestId"]) not in repo.pulls:
                return _json(404, {"message": "TF401180: The requested pull request was not found"})
            base, head = repo.pulls[int(named["pullRequestId"])]
            return _json(
                200,
                {
                    "pullRequestId": int(named["pullRequestId"]),
                    "status": "active",
                    "lastMergeSourceCommit": {"commitId": head},
                    "lastMergeTargetCommit": {"commitId": base},
                },
            )
        if rest == "items":
            sha = self._rev(repo, query.get("versionDescriptor.version", "refs/heads/main"))
            archive = subprocess.run(["git", "archive", "--format=zip", sha], cwd=repo.bare, capture_output=True,
                                     timeout=30, check=True).stdout  # fmt: skip
            return 200, {"Content-Type": "application/zip"}, archive
        return _json(404, {"message": "not found"})


__all__ = ["ZERO", "AzureDevOpsTwin"]
