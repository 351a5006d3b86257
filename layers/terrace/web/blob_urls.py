"""The blob URLs of the embedded server (`adapters/fs_blobs.py`), mounted only when the blobs are on the filesystem:
clients PUT and GET them as they do S3 presigned URLs. The URL's own signature authorizes the request (no bearer
token); its method, expiry and size limit are checked before a byte is written. An upload URL is single-use: a PUT
to an object that exists is refused (409), before its body is read and again, atomically, when the upload is put in
place (`FsBlobs.open_writer(exclusive=True)`). The one exception is what the area owning the key allows
(`ConfigurationVersionService.accepts_upload`, `ModuleVersionService.accepts_upload`): a configuration archive no
run was created from yet, and a module version's tarball, may be uploaded again. Once an upload is in place, the PUT
hands the `blob.landed` event to the events service before it answers (what S3's event notification does on AWS): a
two-step state upload is finalized by this write, so the client's next read already sees it.

These two routes are `async` (unlike every API endpoint) because they stream bodies: an upload is hashed and
written in 1 MiB batches in the thread pool while the next batch arrives, and a download streams from disk in
1 MiB reads, so a 100 MB state never sits in memory.
"""

from __future__ import annotations

import asyncio
import logging

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from terrace.adapters.fs_blob_urls import URL_PREFIX, BlobUrlRefused
from terrace.adapters.fs_blobs import BlobWriter, FsBlobs, check_key
from terrace.services.events import landed_event
from terrace.web.errors import error_response

log = logging.getLogger("terrace.blobs")

PATH = URL_PREFIX + "{key:path}"
WRITE_BATCH = 1024 * 1024  # request chunks are gathered to this size before they go to the thread pool


class _BlobFile(FileResponse):
    chunk_size = 1024 * 1024  # fewer thread-pool round trips than Starlette's 64 KiB


def _refused(exc: BlobUrlRefused) -> Response:
    titles = {413: "payload too large", 403: "forbidden", 409: "conflict"}
    title = titles.get(exc.status, "not found")
    return error_response(exc.status, title, exc.detail)


def _blobs(request: Request) -> FsBlobs:
    blobs = request.app.state.container.blobs
    assert isinstance(blobs, FsBlobs)
    return blobs


def _key(request: Request) -> str:
    try:
        return check_key(str(request.path_params["key"]))
    except ValueError as exc:
        raise BlobUrlRefused(404, str(exc)) from None


async def download(request: Request) -> Response:
    blobs = _blobs(request)
    try:
        key = _key(request)
        blobs.signer.verify(request.method, key, dict(request.query_params))
    except BlobUrlRefused as exc:
        return _refused(exc)
    path = blobs.path_of(key)
    if not await anyio.to_thread.run_sync(path.is_file):
        return _refused(BlobUrlRefused(404, "no such object"))
    try:
        await anyio.to_thread.run_sync(blobs.require_intact, key)  # a damaged object is refused, not served
    except BlobUrlRefused as exc:
        log.error("blob %s is damaged: %s", key, exc.detail)
        return _refused(exc)
    return _BlobFile(path, media_type="application/octet-stream")


async def _receive_into(request: Request, writer: BlobWriter) -> None:
    """The request body into `writer` in WRITE_BATCH batches: each batch is hashed and written in a worker thread
    while the event loop decrypts and parses the next one (at most one write in flight: ~2 batches in memory)."""
    loop = asyncio.get_running_loop()
    in_flight: asyncio.Future[None] | None = None
    pending: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            pending.append(chunk)
            size += len(chunk)
            if size >= WRITE_BATCH:
                if in_flight is not None:
                    await in_flight  # a refusal (413 past the URL's limit) surfaces here
                in_flight = loop.run_in_executor(None, _write_all, writer, pending)
                pending, size = [], 0
    except BaseException:
        if in_flight is not None:
            await asyncio.wait([in_flight])  # the caller aborts the writer: not under a write
            if not in_flight.cancelled():
                in_flight.exception()  # retrieved: this request's own error is the one to report
        raise
    if in_flight is not None:
        await in_flight
    if pending:
        await anyio.to_thread.run_sync(_write_all, writer, pending)


def _write_all(writer: BlobWriter, chunks: list[bytes]) -> None:
    for chunk in chunks:  # chunk by chunk: joining them first would copy every byte once more
        writer.write(chunk)


async def upload(request: Request) -> Response:
    blobs = _blobs(request)
    try:
        key = _key(request)
        max_bytes = blobs.signer.verify("PUT", key, dict(request.query_params))
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise BlobUrlRefused(413, f"the object is larger than {max_bytes} bytes")
        # the area that owns the key decides whether an upload may replace it (S3 cannot refuse one)
        exclusive = not await anyio.to_thread.run_sync(_replaceable, request, key)
        if exclusive:
            await anyio.to_thread.run_sync(blobs.refuse_existing, key)  # single-use: before a byte is read
    except BlobUrlRefused as exc:
        return _refused(exc)
    writer = await anyio.to_thread.run_sync(blobs.open_writer, key, max_bytes, exclusive)
    try:
        await _receive_into(request, writer)
        info = await anyio.to_thread.run_sync(writer.commit)
    except BlobUrlRefused as exc:
        await anyio.to_thread.run_sync(writer.abort)
        return _refused(exc)
    except BaseException:
        await anyio.to_thread.run_sync(writer.abort)
        raise
    await anyio.to_thread.run_sync(_landed, request, key)
    return Response(status_code=200, headers={"ETag": f'"{info.etag}"'})


def _replaceable(request: Request, key: str) -> bool:
    container = request.app.state.container
    return bool(container.configuration_versions.accepts_upload(key) or container.module_versions.accepts_upload(key))


def _landed(request: Request, key: str) -> None:
    """The landing's effects (finalizing a state upload); on a failure the event goes to the events queue, whose
    worker retries it (the object is in place either way, and the client's unlock finalizes too)."""
    container = request.app.state.container
    event = landed_event(key)
    try:
        container.events.handle(event)
    except Exception:
        log.exception("handling %s failed; queued for the events worker", event)
        try:
            container.publisher.publish(event)
        except Exception:
            log.exception("could not queue %s", event)


routes = [Route(PATH, download, methods=["GET", "HEAD"]), Route(PATH, upload, methods=["PUT"])]
