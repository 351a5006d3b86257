"""The runner protocol's part for Hold Your Own Key (`docs/features/hyok.md`): what an agent working a job of a
HYOK workspace gets from `POST /api/runner/jobs/:id/hyok-key` (`HyokKeyRequest` -> `HyokJobKey`). How to reach the
customer's key (its id, the OIDC configuration's attributes and a fresh workload identity token for it), the
context every data key of the workspace is wrapped with, and the current state when it is encrypted: its
ciphertext's URL and its wrapped data key; for an apply, the sealed plan's recorded data key. A planning agent
records its sealed plan's wrapped data key (`POST /api/runner/jobs/:id/hyok-plan-key`: `HyokPlanKeyRequest`), so
that revoking its customer key version stops the plan from being applied. The agent unwraps and wraps with its own
key wrapper; the server hands out no plaintext key."""

from __future__ import annotations

from pydantic import BaseModel, Field


class HyokKeyRequest(BaseModel):
    runner_id: str = Field(min_length=1, max_length=200)


class HyokPlanKeyRequest(BaseModel):
    """The wrapped data key a planning agent sealed its saved plan with."""

    runner_id: str = Field(min_length=1, max_length=200)
    encrypted_dek: str = Field(min_length=1, max_length=16 * 1024, repr=False)
    key_version: str = Field(min_length=1, max_length=2048)
    context: dict[str, str] = Field(max_length=8)


class SealedPlanKey(BaseModel):
    """A sealed plan's recorded data key (its key version is not revoked)."""

    data_key_id: str
    encrypted_dek: str = Field(default="", repr=False)
    context: dict[str, str] = Field(default_factory=dict)


class EncryptedState(BaseModel):
    state_version_id: str
    download_url: str
    encrypted_dek: str = Field(default="", repr=False)  # empty: a plain state from before HYOK was enabled
    context: dict[str, str]
    serial: int
    lineage: str


class HyokJobKey(BaseModel):
    hyok_configuration_id: str
    kek_id: str
    oidc_kind: str
    kms_options: dict[str, str] = Field(default_factory=dict)
    oidc: dict[str, str] = Field(default_factory=dict)
    web_identity_token: str = Field(default="", repr=False)
    context: dict[str, str]  # a new data key of this workspace's state is wrapped with it
    state: EncryptedState | None = None
    plan: SealedPlanKey | None = None  # an apply job's: the sealed plan's data key, as recorded
