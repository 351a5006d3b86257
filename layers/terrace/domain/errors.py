"""Domain errors. Each protocol maps them to its status codes in exactly one place."""

from __future__ import annotations


class TerraceError(Exception):
    """Base of every error a client can cause."""

    title = "error"

    def __init__(self, detail: str = "", *, meta: dict[str, object] | None = None) -> None:
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.meta = meta or {}


class Unauthenticated(TerraceError):
    title = "unauthorized"


class Forbidden(TerraceError):
    title = "forbidden"


class NotFound(TerraceError):
    title = "not found"


class Conflict(TerraceError):
    title = "conflict"


class TransitionNotAllowed(Conflict):
    """The resource is not in a state that allows the action (HCP Terraform's wording)."""

    title = "transition not allowed"


class Locked(Conflict):
    """The workspace is locked by someone else. meta may carry the holder's lock."""

    title = "workspace locked"


class PreconditionFailed(TerraceError):
    title = "precondition failed"


class Invalid(TerraceError):
    """Malformed or semantically invalid input (422)."""

    title = "invalid attribute"

    def __init__(
        self,
        detail: str = "",
        *,
        pointer: str | None = None,
        meta: dict[str, object] | None = None,
        also: tuple[str, ...] = (),
    ) -> None:
        super().__init__(detail, meta=meta)
        self.pointer = pointer
        self.also = also  # further details about the same input, each its own error object


class ValidationFailed(Invalid):
    """A record-level rule refused the input (HCP Terraform's wording: "Validation failed: ... has already been
    taken"); go-tfe matches its title and detail."""

    title = "invalid attributes"


class TooLarge(TerraceError):
    title = "payload too large"


class TooManyRequests(TerraceError):
    title = "too many requests"


class BadRequest(TerraceError):
    title = "bad request"
