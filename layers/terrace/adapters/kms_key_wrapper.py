"""Customer keys in AWS KMS (`key_wrapper.KeyWrapper`), reached as the customer's IAM role: Terrace's workload
identity token for the HYOK configuration is exchanged for the role of its AWS OIDC configuration
(`AssumeRoleWithWebIdentity`), and KMS wraps (`Encrypt`) or unwraps (`Decrypt`) the data key in the key's region
with the encryption context. Terrace's own credentials never touch the customer's key; the customer's key policy
decides. Other kinds of OIDC configuration (Azure Key Vault, GCP Cloud KMS, Vault Transit) are not reached.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from terrace.adapters.key_wrapper import CustomerKey, KeyUnavailable, Wrapped

SESSION_S = 900  # the shortest session STS gives
# a customer's key service that does not answer fails the test in seconds, not after botocore's minute
TIMEOUTS: dict[str, Any] = {
    "connect_timeout": 5,
    "read_timeout": 15,
    "retries": {"max_attempts": 2, "mode": "standard"},
}


class KmsKeyWrapper:
    def __init__(self, *, region: str, endpoint_url: str | None = None, sts_endpoint: str | None = None) -> None:
        self._region, self._endpoint, self._sts_endpoint = region, endpoint_url, sts_endpoint

    def _kms(self, key: CustomerKey) -> Any:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError

        if key.oidc_kind != "aws":
            raise KeyUnavailable(
                f"Terrace reaches customer keys in AWS KMS only, not through a {key.oidc_kind} OIDC configuration"
            )
        role = key.oidc.get("role-arn", "")
        region = key.kms_options.get("key-region") or self._region
        config = Config(**TIMEOUTS)
        sts = boto3.client("sts", region_name=region, endpoint_url=self._sts_endpoint or self._endpoint, config=config)
        try:
            creds = sts.assume_role_with_web_identity(
                RoleArn=role,
                RoleSessionName="terrace-hyok",
                WebIdentityToken=key.web_identity_token,
                DurationSeconds=SESSION_S,
            )["Credentials"]
        except (ClientError, BotoCoreError) as exc:
            raise KeyUnavailable(f"assuming {role} with the workload identity token failed: {_reason(exc)}") from exc
        return boto3.client(
            "kms",
            region_name=region,
            endpoint_url=self._endpoint,
            aws_access_key_id=creds["AccessKeyId"],
            aws_secret_access_key=creds["SecretAccessKey"],
            aws_session_token=creds["SessionToken"],
            config=config,
        )

    def wrap(self, key: CustomerKey, plaintext: bytes, context: dict[str, str]) -> Wrapped:
        from botocore.exceptions import BotoCoreError, ClientError

        kms = self._kms(key)
        try:
            answer = kms.encrypt(KeyId=key.kek_id, Plaintext=plaintext, EncryptionContext=context)
        except (ClientError, BotoCoreError) as exc:
            raise KeyUnavailable(f"KMS refused to wrap a data key with {key.kek_id}: {_reason(exc)}") from exc
        return Wrapped(base64.b64encode(answer["CiphertextBlob"]).decode(), str(answer["KeyId"]))

    def unwrap(self, key: CustomerKey, ciphertext: str, context: dict[str, str]) -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            blob = base64.b64decode(ciphertext, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise KeyUnavailable("the wrapped data key is malformed") from exc
        kms = self._kms(key)
        try:
            answer = kms.decrypt(CiphertextBlob=blob, KeyId=key.kek_id, EncryptionContext=context)
        except (ClientError, BotoCoreError) as exc:
            raise KeyUnavailable(f"KMS refused to unwrap the data key with {key.kek_id}: {_reason(exc)}") from exc
        return bytes(answer["Plaintext"])


def _reason(exc: Exception) -> str:
    error = getattr(exc, "response", {}).get("Error", {}) if hasattr(exc, "response") else {}
    return str(error.get("Message") or error.get("Code") or exc)[:300]
