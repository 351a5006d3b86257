"""A small JSON:API client of the TFC API: pagination, rate-limit retries, errors with their status."""

from __future__ import annotations

import ssl
import time
import zlib
from collections.abc import Callable
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type, retry_if_result, stop_after_attempt

JSONAPI = "application/vnd.api+json"
PAGE_SIZE = 100


DOWNLOAD_MAX_BYTES = 1024 * 1024 * 1024  # a state file or an archive, decoded
ERROR_BODY_MAX_BYTES = 64 * 1024
RATE_LIMITED_ATTEMPTS = 30  # tries of a request the server answers 429, each after the wait it asks (at most 30 s)
RATE_LIMITED_MAX_WAIT_S = 30.0


class _RateLimited(Exception):  # noqa: N818 -- not an error: a 429 whose wait is `wait_s`
    def __init__(self, wait_s: float) -> None:
        super().__init__(f"rate limited: again in {wait_s} s")
        self.wait_s = wait_s


def _asked_wait(headers: httpx.Headers, reset: bool = True) -> float:
    """The wait a 429 asks for: its `Retry-After` (or `X-RateLimit-Reset` when `reset`), 1 s if none, 30 s at most."""
    asked = headers.get("Retry-After") or (headers.get("X-RateLimit-Reset") if reset else None) or 1
    return min(float(asked), RATE_LIMITED_MAX_WAIT_S)


def _rate_limited_wait(state: RetryCallState) -> float:
    failed = state.outcome.exception() if state.outcome is not None else None
    return failed.wait_s if isinstance(failed, _RateLimited) else 1.0


class ApiError(Exception):
    """A non-2xx answer: `status` and the server's error detail."""

    def __init__(self, side: str, method: str, path: str, status: int, detail: str) -> None:
        super().__init__(f"{side}: {method} {path} -> {status} {detail}")
        self.status = status


def ssl_context(ca_bundles: list[str]) -> ssl.SSLContext:
    """The system's roots plus the given PEM bundles (a private CA of a Terrace, TFE or OTF)."""
    context = ssl.create_default_context()
    for bundle in ca_bundles:
        context.load_verify_locations(cafile=bundle)
    return context


class Api:
    """One side of the migration (`side` is "source" or "target" in messages)."""

    def __init__(
        self,
        side: str,
        url: str,
        token: str,
        verify: ssl.SSLContext | bool = True,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.side = side
        self._sleep = sleep  # the waits a 429 asks for (tests: a recording one)
        self.url = url.rstrip("/")
        self.origin = urlsplit(self.url)._replace(path="", query="", fragment="").geturl()
        self.verify = verify
        self.services: dict[str, str] = {}
        self.http = httpx.Client(
            base_url=self.url,
            verify=verify,
            transport=transport,
            timeout=60,
            headers={"Authorization": f"Bearer {token}", "Accept": JSONAPI, "User-Agent": "terrace-migrate"},
        )
        self.bare = httpx.Client(verify=verify, timeout=60, headers={"User-Agent": "terrace-migrate"})

    def close(self) -> None:
        self.http.close()
        self.bare.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """A request, retried while the server answers 429 (after its Retry-After); the token goes only to this
        server's own origin (a presigned store or archivist gets none: httpx drops it on a redirect too)."""
        own = not path.startswith("http") or path.startswith(self.origin + "/")
        retrying = Retrying(
            stop=stop_after_attempt(RATE_LIMITED_ATTEMPTS),
            wait=lambda state: _asked_wait(state.outcome.result().headers),  # type: ignore[union-attr]
            retry=retry_if_result(lambda response: response.status_code == 429),
            retry_error_callback=lambda state: state.outcome.result(),  # type: ignore[union-attr]
            sleep=self._sleep,
        )
        response: httpx.Response = retrying((self.http if own else self.bare).request, method, path, **kwargs)
        return response

    def request(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        """The decoded JSON body (None for an empty one); ApiError on a status >= 400."""
        kwargs: dict[str, Any] = {"params": params}
        if body is not None:
            kwargs["json"] = body
            kwargs["headers"] = {"Content-Type": JSONAPI}
        response = self._send(method, path if path.startswith("http") else f"/api/v2{path}", **kwargs)
        if response.status_code >= 400:
            raise ApiError(self.side, method, path, response.status_code, _detail(response))
        return response.json() if response.content else None

    def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """A resource's `data`, or None when it is absent (404)."""
        try:
            document = self.request("GET", path, params=params)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        data: dict[str, Any] = document["data"]
        return data

    def pages(self, path: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every item of a paginated collection (page[number]/page[size], as TFC pages)."""
        items: list[dict[str, Any]] = []
        page = 1
        while True:
            document = self.request(
                "GET", path, params={**(params or {}), "page[number]": page, "page[size]": PAGE_SIZE}
            )
            data = document.get("data") or []
            items.extend(data)
            pagination = (document.get("meta") or {}).get("pagination") or {}
            next_page = pagination.get("next-page")
            if not data or not next_page or next_page == page:
                return items
            page = int(next_page)

    def try_list(self, path: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]] | None:
        """Like `list`, None when the server has no such collection or the token may not read it."""
        try:
            return self.pages(path, params)
        except ApiError as exc:
            if exc.status in (401, 403, 404):
                return None
            raise

    def download(self, url: str, max_bytes: int = DOWNLOAD_MAX_BYTES) -> bytes:
        """A file's bytes (a state, a policy, a module archive), from this server or a store it points to. Read as
        it arrives, decoded (httpx undoes a `Content-Encoding`), and refused past `max_bytes`: a source cannot make
        the migration hold more than that, whatever it declares or compresses."""
        if url.startswith("/"):
            url = self.origin + url
        own = url.startswith(self.origin + "/")
        tries = 0

        def get() -> bytes:
            nonlocal tries
            tries += 1
            client = self.http if own else self.bare
            with client.stream("GET", url, follow_redirects=True, headers={"Accept-Encoding": "gzip"}) as response:
                if response.status_code == 429 and tries < RATE_LIMITED_ATTEMPTS:
                    raise _RateLimited(_asked_wait(response.headers, reset=False))
                if response.status_code >= 400:
                    body = _bounded(response, ERROR_BODY_MAX_BYTES)
                    raise ApiError(self.side, "GET", url, response.status_code, body.decode(errors="replace")[:300])
                declared = response.headers.get("Content-Length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    raise ApiError(self.side, "GET", url, 413, f"the file is larger than {max_bytes} bytes")
                body = _bounded(response, max_bytes)
                if len(body) > max_bytes:
                    raise ApiError(self.side, "GET", url, 413, f"the file is larger than {max_bytes} bytes")
                return body

        body: bytes = Retrying(
            stop=stop_after_attempt(RATE_LIMITED_ATTEMPTS),
            wait=_rate_limited_wait,
            retry=retry_if_exception_type(_RateLimited),
            sleep=self._sleep,
            reraise=True,
        )(get)
        return body

    def service(self, name: str, default: str) -> str:
        """A service's base URL from the server's discovery document (`/.well-known/terraform.json`)."""
        if name not in self.services:
            response = self.http.get(self.origin + "/.well-known/terraform.json")
            found = response.json().get(name) if response.status_code == 200 else None
            self.services[name] = urljoin(self.origin + "/", str(found or default))
        return self.services[name]

    def terraform_get(self, url: str) -> str:
        """The archive URL a module registry's `/download` names (`X-Terraform-Get`), made absolute."""
        response = self._send("GET", url)
        location = response.headers.get("X-Terraform-Get")
        if response.status_code >= 400 or not location:
            raise ApiError(self.side, "GET", url, response.status_code, _detail(response) or "no X-Terraform-Get")
        return location if "::" in location.split("//")[0] else urljoin(url, location)

    def put_bytes(self, url: str, content: bytes) -> None:
        """An upload to a `hosted-state-upload-url` or `links.upload` (this server, an archivist, a presigned URL)."""
        response = self._send("PUT", url, content=content)
        if response.status_code >= 400:
            raise ApiError(self.side, "PUT", url, response.status_code, _detail(response))


def _bounded(response: httpx.Response, max_bytes: int) -> bytes:
    """At most `max_bytes` + 1 bytes of a streamed body (one more tells the caller it was larger), decoded here
    from its raw bytes: httpx's own decoder expands a whole chunk at once, so a small gzip chunk could become
    gigabytes before any bound saw it."""
    if response.is_stream_consumed:  # a transport that handed over a body already read (tests' mock transports)
        return response.content[: max_bytes + 1]
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity", "gzip", "deflate"):
        raise ApiError("source", "GET", str(response.url), 415, f"the file's Content-Encoding {encoding} is not read")
    inflate = None if encoding in ("", "identity") else zlib.decompressobj(47 if encoding == "gzip" else 15)
    chunks: list[bytes] = []
    total = 0
    for raw in response.iter_raw():
        pending = raw
        while pending and total <= max_bytes:
            if inflate is None:
                piece, pending = pending[: max_bytes + 1 - total], b""
            else:
                try:
                    piece = inflate.decompress(pending, max_bytes + 1 - total)
                except zlib.error as exc:
                    raise ApiError("source", "GET", str(response.url), 502, f"the file is not {encoding}") from exc
                pending = inflate.unconsumed_tail
            chunks.append(piece)
            total += len(piece)
        if total > max_bytes:
            break
    return b"".join(chunks)


def _detail(response: httpx.Response) -> str:
    try:
        errors = response.json().get("errors") or []
        return "; ".join(str(e.get("detail") or e.get("title") or e) for e in errors) or response.text[:300]
    except ValueError:
        return response.text[:300]
