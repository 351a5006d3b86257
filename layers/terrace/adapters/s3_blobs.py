"""S3 implementation of the blob store."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore.exceptions import ClientError, FlexibleChecksumError

from terrace.adapters.blobs import BlobDamaged, BlobInfo


class S3Blobs:
    def __init__(self, client: Any, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        self._client.put_object(Bucket=self._bucket, Key=key, Body=data, ContentType=content_type)

    def _object(self, key: str, version: str | None) -> dict[str, str]:
        return {"Bucket": self._bucket, "Key": key, **({"VersionId": version} if version else {})}

    def get(self, key: str, version: str | None = None) -> bytes:
        try:
            body: bytes = self._client.get_object(**self._object(key, version))["Body"].read()
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("NoSuchKey", "404"):
                raise KeyError(key) from exc
            raise
        except FlexibleChecksumError as exc:  # botocore checks the object's stored checksum as it reads
            raise BlobDamaged(f"{key}: {exc}") from exc
        return body

    def iter_chunks(self, key: str, chunk_size: int = 1024 * 1024, version: str | None = None) -> Iterator[bytes]:
        body = self._client.get_object(**self._object(key, version))["Body"]
        try:
            yield from body.iter_chunks(chunk_size)
        except FlexibleChecksumError as exc:
            raise BlobDamaged(f"{key}: {exc}") from exc
        finally:
            body.close()

    def get_range(self, key: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        try:
            response = self._client.get_object(Bucket=self._bucket, Key=key, Range=f"bytes={start}-{end - 1}")
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "InvalidRange":
                return b""
            raise
        data: bytes = response["Body"].read()
        return data

    def head(self, key: str) -> BlobInfo | None:
        try:
            response = self._client.head_object(Bucket=self._bucket, Key=key)
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        version = response.get("VersionId")
        return BlobInfo(
            size=int(response["ContentLength"]),
            etag=str(response["ETag"]).strip('"'),
            version=str(version) if version and version != "null" else None,
        )

    def delete(self, key: str) -> None:
        self._client.delete_object(Bucket=self._bucket, Key=key)

    def copy(self, source_key: str, target_key: str, source_version: str | None = None) -> str | None:
        source = self._object(source_key, source_version)
        response = self._client.copy_object(Bucket=self._bucket, Key=target_key, CopySource=source)
        version = response.get("VersionId")
        return str(version) if version and version != "null" else None

    def presign_put(self, key: str, ttl_s: int, exclusive: bool = False) -> str:
        params = self._object(key, None)
        if exclusive:  # a signed `If-None-Match: *`: S3 refuses (412) a PUT of a key that exists, and any without it
            params["IfNoneMatch"] = "*"
        url: str = self._client.generate_presigned_url("put_object", Params=params, ExpiresIn=ttl_s, HttpMethod="PUT")
        return url

    def presign_get(self, key: str, ttl_s: int, version: str | None = None) -> str:
        url: str = self._client.generate_presigned_url("get_object", Params=self._object(key, version), ExpiresIn=ttl_s)
        return url
