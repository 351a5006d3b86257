"""HTTP clients: the runner API (`/api/runner`, runner token) and presigned S3 transfers (no credentials)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type, retry_if_result, stop_after_attempt

from terrace.domain.jobs import (
    BEAT_HEADER,
    HAND_OVER_HEADER,
    FinishRequest,
    FinishResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    HeldRuns,
    JobSpec,
    NextRequest,
    UploadUrls,
    beat_of,
)

log = logging.getLogger("terrace.runner.client")
T = TypeVar("T")
RETRY_DELAYS_S = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)


class HandOver(Exception):  # noqa: N818 -- not an error: the API's word to exit
    """The API asks this runner to exit: other organizations wait for a runner and every slot is held."""


class ApiError(RuntimeError):
    """The runner API refused a request (a 4xx other than the expected ones)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _retrying(delays: tuple[float, ...], sleep: Callable[[float], None], **kwargs: Any) -> Retrying:
    """Tries once, then once after each of `delays`."""
    return Retrying(
        stop=stop_after_attempt(len(delays) + 1),
        wait=lambda state: delays[min(state.attempt_number, len(delays)) - 1] if delays else 0.0,  # past: unused
        sleep=sleep,
        **kwargs,
    )


def with_retries(
    call: Callable[[], httpx.Response],
    what: str,
    delays: tuple[float, ...] = RETRY_DELAYS_S,
    sleep: Callable[[float], None] = time.sleep,
) -> httpx.Response:
    """Retries connection errors and 5xx with back-off; returns the last response otherwise (the last connection
    error goes up)."""

    def retrying_after(state: RetryCallState) -> None:
        assert state.outcome is not None
        if state.outcome.failed:
            failed = type(state.outcome.exception()).__name__
            log.warning("%s failed (attempt %d): %s; retrying", what, state.attempt_number, failed)
        else:
            status = state.outcome.result().status_code
            log.warning("%s got %d (attempt %d); retrying", what, status, state.attempt_number)

    response: httpx.Response = _retrying(
        delays,
        sleep,
        retry=retry_if_exception_type(httpx.TransportError) | retry_if_result(lambda r: r.status_code >= 500),
        before_sleep=retrying_after,
        retry_error_callback=lambda state: state.outcome.result(),
    )(call)
    return response


def _verify(ssl_cert_file: str | None) -> str | bool:
    return ssl_cert_file or True


class RunnerApi:
    """`/api/runner/jobs/...` with `Authorization: Bearer <runner token>`."""

    def __init__(
        self,
        api_url: str,
        token: str,
        runner_id: str,
        ssl_cert_file: str | None = None,
        transport: httpx.BaseTransport | None = None,
        retry_delays: tuple[float, ...] = RETRY_DELAYS_S,
        lanes: tuple[str, ...] = (),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.runner_id = runner_id
        self.lanes = lanes  # only jobs of these lanes (empty: any)
        self._registry = f"{api_url.rstrip('/')}/api/registry/v1/modules"
        self._token = token
        self._delays, self._sleep = retry_delays, sleep
        self._http = httpx.Client(
            base_url=f"{api_url.rstrip('/')}/api/runner",
            verify=_verify(ssl_cert_file),
            transport=transport,
            timeout=httpx.Timeout(30.0, connect=10.0),
        )

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"}

    def _post(self, path: str, body: str, what: str) -> httpx.Response:
        headers = {**self._headers(), "Content-Type": "application/json"}
        return with_retries(
            lambda: self._http.post(path, content=body, headers=headers), what, self._delays, self._sleep
        )

    @staticmethod
    def _check(response: httpx.Response, what: str) -> None:
        if response.status_code >= 400:
            raise ApiError(f"{what}: HTTP {response.status_code}: {response.text[:300]}", response.status_code)

    def next(self, wait_s: float, served: int = 0) -> JobSpec | None:
        """Long-polls the API for this runner's organization's next job, claimed for it; None when none came.
        `served`: the jobs this runner ran; `HandOver` when the API answers that its slot goes to another
        organization (the runner exits)."""
        asked = NextRequest.model_validate({"runner_id": self.runner_id, "lanes": list(self.lanes), "served": served})
        body = asked.model_dump_json(exclude_defaults=True)
        headers = {**self._headers(), "Content-Type": "application/json"}
        timeout = httpx.Timeout(30.0 + wait_s, connect=10.0)
        response = with_retries(
            lambda: self._http.post(
                "/jobs/next", params={"wait": wait_s}, content=body, headers=headers, timeout=timeout
            ),
            "next job",
            self._delays,
            self._sleep,
        )
        if response.status_code == 204:
            if response.headers.get(HAND_OVER_HEADER):
                raise HandOver
            return None
        self._check(response, "next job")
        return JobSpec.model_validate_json(response.content)

    def heartbeat(self, job_id: str) -> HeartbeatResponse:
        """Cancel flags; a job the API no longer knows as ours (404/409/410) must stop at once."""
        body = HeartbeatRequest(runner_id=self.runner_id).model_dump_json()
        response = self._post(f"/jobs/{job_id}/heartbeat", body, f"heartbeat {job_id}")
        if response.status_code in (404, 409, 410):
            log.warning("job %s is no longer ours (HTTP %d): stopping it", job_id, response.status_code)
            return HeartbeatResponse(cancel=True, force_cancel=True)
        self._check(response, f"heartbeat {job_id}")
        return HeartbeatResponse.model_validate_json(response.content)

    def start_apply(self, job_id: str) -> HeartbeatResponse:
        """Tells the API terraform apply starts now; any refusal raises (the runner must not apply then)."""
        body = HeartbeatRequest(runner_id=self.runner_id).model_dump_json()
        response = self._post(f"/jobs/{job_id}/applying", body, f"applying {job_id}")
        self._check(response, f"applying {job_id}")
        return HeartbeatResponse.model_validate_json(response.content)

    def release(self, job_id: str) -> None:
        """Hands the job back (this runner stops): another one runs it again, under the lost-attempt rules."""
        body = HeartbeatRequest(runner_id=self.runner_id).model_dump_json()
        response = self._post(f"/jobs/{job_id}/release", body, f"release {job_id}")
        self._check(response, f"release {job_id}")

    def put_logs(self, job_id: str, offset: int, chunk: bytes) -> HeartbeatResponse | None:
        """Appends a chunk at `offset`; the heartbeat answer the API recorded with it (None: not a heartbeat)."""
        headers = {**self._headers(), "Content-Type": "application/octet-stream"}
        response = with_retries(
            lambda: self._http.put(f"/jobs/{job_id}/logs", params={"offset": offset}, content=chunk, headers=headers),
            f"logs {job_id}@{offset}",
            self._delays,
            self._sleep,
        )
        self._check(response, f"logs {job_id}@{offset}")
        return beat_of(response.headers.get(BEAT_HEADER))

    def finish(self, request: FinishRequest, job_id: str) -> FinishResponse | None:
        """The run's status and maybe the same run's apply claimed for this runner; None when not told."""
        response = self._post(f"/jobs/{job_id}/finish", request.model_dump_json(), f"finish {job_id}")
        if response.status_code == 409:
            log.warning("finish %s: the API already closed this job (409)", job_id)
            return None
        self._check(response, f"finish {job_id}")
        if response.status_code == 204 or not response.content:
            return None
        return FinishResponse.model_validate_json(response.content)

    def upload_urls(self, job_id: str) -> UploadUrls:
        """The running plan's upload URLs, signed now (the spec's may have expired with the API's session)."""
        body = HeartbeatRequest(runner_id=self.runner_id).model_dump_json()
        response = self._post(f"/jobs/{job_id}/upload-urls", body, f"upload URLs {job_id}")
        self._check(response, f"upload URLs {job_id}")
        return UploadUrls.model_validate_json(response.content)

    def held_runs(self, run_ids: list[str]) -> set[str]:
        """Of these runs (whose plan folder this runner holds), those it may still apply."""
        body = HeldRuns(runner_id=self.runner_id, run_ids=run_ids).model_dump_json()
        response = self._post("/held-runs", body, "held runs")
        self._check(response, "held runs")
        return set(HeldRuns.model_validate_json(response.content).run_ids)

    def module_versions(self, address: str, run_token: str) -> Any:
        """The registry protocol's versions of a private module (`org/name/provider`), read with the run's token as
        its `terraform init` read them; None when unanswered (one try: a warning is not worth a retry)."""
        try:
            response = self._http.get(
                f"{self._registry}/{address}/versions", headers={"Authorization": f"Bearer {run_token}"}
            )
            return response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    def close(self) -> None:
        self._http.close()


class Transfers:
    """Presigned GET/PUT of configuration tarballs and plan artifacts: never sends the runner token."""

    def __init__(
        self,
        ssl_cert_file: str | None = None,
        transport: httpx.BaseTransport | None = None,
        retry_delays: tuple[float, ...] = RETRY_DELAYS_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._delays, self._sleep = retry_delays, sleep
        self._http = httpx.Client(
            verify=_verify(ssl_cert_file), transport=transport, timeout=httpx.Timeout(120.0, connect=10.0)
        )

    def download(self, url: str, dest: Path, max_bytes: int, what: str, follow_redirects: bool = False) -> int:
        """Streams `url` to `dest`; refuses bodies above `max_bytes` and any answer but a 2xx (a redirect is
        followed only when asked: a release mirror's, never a presigned URL's). Returns the size."""
        tries = 0

        def get() -> int:
            nonlocal tries
            tries += 1
            with self._http.stream("GET", url, follow_redirects=follow_redirects) as response:
                if response.status_code >= 500 and tries <= len(self._delays):
                    raise httpx.RemoteProtocolError(f"HTTP {response.status_code}")
                if response.status_code >= 300:
                    status = response.status_code
                    raise ApiError(f"downloading the {what} failed: HTTP {status}", status)
                size = 0
                with dest.open("wb") as out:
                    for chunk in response.iter_bytes(1 << 20):
                        size += len(chunk)
                        if size > max_bytes:
                            raise ApiError(f"the {what} is larger than {max_bytes} bytes", 413)
                        out.write(chunk)
                return size

        def retrying_after(state: RetryCallState) -> None:
            failed = state.outcome.exception() if state.outcome is not None else None
            log.warning("downloading the %s failed (attempt %d): %s; retrying", what, state.attempt_number, failed)

        size: int = _retrying(
            self._delays,
            self._sleep,
            retry=retry_if_exception_type(httpx.TransportError),
            before_sleep=retrying_after,
            reraise=True,
        )(get)
        return size

    def upload(self, url: str, source: Path, what: str) -> None:
        """PUT once: `If-None-Match: *` (signed into the runner's S3 URLs) never replaces an object."""
        data = source.read_bytes()
        headers = {"Content-Type": "application/octet-stream", "If-None-Match": "*"}
        attempts = 0

        def put() -> httpx.Response:
            nonlocal attempts
            attempts += 1
            return self._http.put(url, content=data, headers=headers)

        response = with_retries(put, f"upload {what}", self._delays, self._sleep)
        if response.status_code in (409, 412) and attempts > 1:
            # the URL is this job's alone and a store lands a body whole or not at all: the object exists because
            # an earlier attempt landed it and only its answer was lost (a connection reset after the PUT)
            log.warning("upload %s: an earlier attempt landed it (HTTP %d on a retry)", what, response.status_code)
            return
        if response.status_code >= 400:
            raise ApiError(f"uploading the {what} failed: HTTP {response.status_code}", response.status_code)

    def close(self) -> None:
        self._http.close()
