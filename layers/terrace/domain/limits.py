"""Every size limit on what a client can send, in one place (documented in docs/architecture/input-limits.md).

Field limits are checked where the value is validated (422 naming the field); `ITEM_MAX_BYTES` is the
table adapters' last line of defence (413); request bodies and JSON nesting are checked before parsing.
"""

from __future__ import annotations

import json
from typing import Any

from terrace.domain.errors import BadRequest, Invalid, TooLarge

ITEM_MAX_BYTES = 400_000  # DynamoDB's "400 KB" item limit (names and values), kept under what it really takes
JSON_MAX_DEPTH = 64  # nesting of any JSON body (JSON:API documents, LockInfo, runner messages)
STATE_JSON_MAX_DEPTH = 512  # nesting of a state file (resource attributes can nest deeply)
SERIAL_MAX = 2**63 - 1  # go-tfe sends serial as int64; terraform and OpenTofu read it as uint64
LINEAGE_MAX = 128  # terraform writes a UUID (36 characters)

DESCRIPTION_MAX = 2000  # workspace and token descriptions
VARIABLE_DESCRIPTION_MAX = 512  # as TFC (go-tfe checks that a longer one is refused)
LOCK_REASON_MAX = 2000
EMAIL_MAX = 254
INVITATIONS_PER_DAY = 200  # invitations one caller sends a day, in all organizations (site admins: no limit)
PENDING_INVITATIONS_MAX = 100  # invited, not yet accepted memberships of one organization
RUN_MESSAGE_MAX = 4000
RUN_VARIABLES_MAX = 100  # run-specific variables per run
RUN_VARIABLE_KEY_MAX = 128
RUN_VARIABLE_VALUE_MAX = 4096  # bytes, like workspace variables
RUN_ADDRS_MAX = 1000  # target-addrs, replace-addrs and invoke-action-addrs entries
PLAN_EXPORT_JSON_MAX = 32 * 1024 * 1024  # a plan JSON the events worker writes a mock bundle of (its files: ~4x)
RUN_ADDR_MAX = 1000
RUN_LIST_MAX_BYTES = 64 * 1024  # variables, target-addrs, replace-addrs, invoke-action-addrs: each list in all
WORKING_DIRECTORY_MAX = 512
TEXT_ATTRIBUTE_MAX = 2048  # other accepted string attributes (source-url, source-name, trigger prefixes…)
EXTRA_ATTRIBUTE_MAX_BYTES = 16 * 1024  # an accepted-but-unused attribute, serialized
LOCK_INFO_MAX_BYTES = 16 * 1024  # an http backend LockInfo, as sent
LOCK_ID_MAX = 256  # its ID (terraform sends a UUID)


def text(value: Any, field: str, max_chars: int, *, pointer_base: str = "/data/attributes") -> str:
    """`value` as a string of at most `max_chars` characters, or a 422 naming the field."""
    if not isinstance(value, str):
        raise Invalid(f"{field} must be a string", pointer=f"{pointer_base}/{field}")
    if len(value) > max_chars:
        raise Invalid(f"{field} is longer than {max_chars} characters", pointer=f"{pointer_base}/{field}")
    return value


def json_bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def bounded_json(value: Any, field: str, max_bytes: int, *, pointer_base: str = "/data/attributes") -> Any:
    """`value` (any JSON) if it serializes to at most `max_bytes`, or a 422 naming the field."""
    if json_bytes(value) > max_bytes:
        raise Invalid(f"{field} is larger than {max_bytes} bytes", pointer=f"{pointer_base}/{field}")
    return value


def check_json_depth(raw: bytes | str, max_depth: int = JSON_MAX_DEPTH) -> None:
    """Refuse JSON nested deeper than `max_depth` before parsing it (the parser would recurse)."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    depth = 0
    in_string = False
    escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > max_depth:
                raise BadRequest(f"JSON nested deeper than {max_depth} levels")
        elif byte in (0x5D, 0x7D):
            depth -= 1


def parse_json(raw: bytes | str, what: str = "request body", max_depth: int = JSON_MAX_DEPTH) -> Any:
    """Parse JSON from a client: 400 for nesting past `max_depth`, 422 for anything not JSON."""
    check_json_depth(raw, max_depth)
    try:
        doc = json.loads(raw, parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Invalid(f"{what} is not valid JSON: {exc}") from exc
    try:  # a lone surrogate escape (\ud800) parses, but could never be stored or answered
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Invalid(f"{what} holds a string that is not valid Unicode (a lone surrogate)") from exc
    return doc


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class ItemTooLarge(TooLarge):
    """A write the table would refuse: past ITEM_MAX_BYTES (413), raised by the table adapters."""


KEY_MAX_BYTES = {"pk": 2048, "gsi1pk": 2048, "sk": 1024, "gsi1sk": 1024}  # DynamoDB's key attribute limits
STATE_ADDRESS_MAX_BYTES = 900  # a resource address in a state (a sort key with the workspace id before it)
OUTPUT_NAME_MAX_BYTES = 900  # an output name in a state (a sort key)
STATE_SUMMARY_MAX_BYTES = 200_000  # a state version's modules/providers/resources summary (in its record)


def check_item(item: dict[str, Any]) -> None:
    """The table adapters' last line of defence: no item past DynamoDB's limits reaches a write."""
    for key, limit in KEY_MAX_BYTES.items():
        value = item.get(key)
        if isinstance(value, str) and len(value.encode("utf-8", "surrogatepass")) > limit:
            raise ItemTooLarge(f"a record key is longer than {limit} bytes")
        if value == "":
            raise Invalid("a record key is empty (an empty name?)")
    size = item_bytes(item)
    if size > ITEM_MAX_BYTES:
        raise ItemTooLarge(f"the record to store is {size} bytes; the limit is {ITEM_MAX_BYTES}")


def item_bytes(item: dict[str, Any]) -> int:
    """An upper bound of a table item's stored size, as DynamoDB counts it (names + values)."""
    return sum(len(name.encode("utf-8", "surrogatepass")) + _value_bytes(value) for name, value in item.items())


def _value_bytes(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes | bytearray):
        return len(value)
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, int | float):
        if not (value == 0 or 1e-130 < abs(value) < 1e125) or (isinstance(value, int) and abs(value) >= 10**38):
            raise Invalid(f"the number {value!r} is out of the range that can be stored")
        return 21
    if isinstance(value, dict):
        return 3 + sum(1 + len(str(k).encode("utf-8", "surrogatepass")) + _value_bytes(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return 3 + sum(1 + _value_bytes(v) for v in value)
    return len(str(value).encode("utf-8", "surrogatepass"))


WORKSPACES_MOVED_MAX = 100  # workspaces one `POST /projects/:id/relationships/workspaces` moves
