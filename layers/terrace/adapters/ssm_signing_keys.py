"""Signing keys in SSM Parameter Store: one SecureString parameter per key under a path (`<path>/<kid>`),
encrypted by the account's `aws/ssm` key. Standard parameters cost nothing at rest (a key's JSON is ~2 KiB of
the 4 KiB limit)."""

from __future__ import annotations

from typing import Any

from terrace.adapters.signing_keys import SigningKey


class SsmSigningKeys:
    def __init__(self, client: Any, path: str) -> None:
        self._ssm, self._path = client, "/" + path.strip("/")

    def load(self) -> list[SigningKey]:
        keys = []
        for page in self._ssm.get_paginator("get_parameters_by_path").paginate(
            Path=self._path, Recursive=False, WithDecryption=True
        ):
            keys += [SigningKey.from_json(p["Value"]) for p in page["Parameters"]]
        return keys

    def put(self, key: SigningKey) -> None:
        self._ssm.put_parameter(
            Name=f"{self._path}/{key.kid}", Value=key.to_json(), Type="SecureString", Overwrite=True, Tier="Standard"
        )

    def delete(self, kid: str) -> None:
        try:
            self._ssm.delete_parameter(Name=f"{self._path}/{kid}")
        except self._ssm.exceptions.ParameterNotFound:
            return
