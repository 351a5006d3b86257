"""Terraform state files: parsing and the facts Terrace extracts from them (pure functions).

A state file (format version 3 or 4) is JSON with `serial`, `lineage`, `outputs` and `resources`.
Nothing here logs or keeps state bodies: they may hold secrets. The stored record of a state version and
the rules for writing one are in `domain/state_versions.py`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import BadRequest, Invalid


@dataclass(frozen=True)
class OutputValue:
    name: str
    sensitive: bool
    type: str  # HCP's simple type: string | number | boolean | array | object | null
    detailed_type: Any  # the cty type JSON, e.g. "string" or ["list", "string"]
    value: Any


@dataclass(frozen=True)
class ResourceInstance:
    address: str  # module.m.aws_instance.web[0]
    name: str
    type: str
    mode: str  # managed | data
    module: str  # "root" or "module.m"
    provider: str  # hashicorp/aws
    name_index: str | None
    ids: tuple[str, ...]  # the instance's `id` / `arn` attribute values, for search
    digest: str  # changes when the instance's attributes change


@dataclass(frozen=True)
class ParsedState:
    serial: int
    lineage: str
    format_version: int
    terraform_version: str
    outputs: tuple[OutputValue, ...]
    resources: tuple[ResourceInstance, ...]
    summary: dict[str, Any] = field(default_factory=dict)  # modules / providers / resources for the API


def md5_hex(raw: bytes) -> str:
    return hashlib.md5(raw).hexdigest()  # noqa: S324 - a checksum, as the clients compute it


def decode_base64(value: Any, pointer: str) -> bytes:
    if not isinstance(value, str):
        raise Invalid(f"{pointer.rsplit('/', 1)[-1]} must be a base64 string", pointer=pointer)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise Invalid(f"{pointer.rsplit('/', 1)[-1]} is not valid base64", pointer=pointer) from exc


def load_json(raw: bytes, what: str = "state") -> Any:
    try:
        return limits.parse_json(raw, what, limits.STATE_JSON_MAX_DEPTH)
    except (BadRequest, Invalid) as exc:
        raise Invalid(exc.detail, pointer="/data/attributes/state") from exc


def parse_state(raw: bytes) -> ParsedState:
    """Parse raw state bytes; raises Invalid for anything that is not a Terraform state."""
    doc = load_json(raw)
    if not isinstance(doc, dict):
        raise Invalid("state must be a JSON object", pointer="/data/attributes/state")
    serial, lineage = doc.get("serial"), doc.get("lineage")
    if not isinstance(serial, int) or isinstance(serial, bool) or not 0 <= serial <= limits.SERIAL_MAX:
        raise Invalid(
            f"state serial must be an integer from 0 to {limits.SERIAL_MAX}", pointer="/data/attributes/state"
        )
    if not isinstance(lineage, str) or not lineage or len(lineage) > limits.LINEAGE_MAX:
        raise Invalid(
            f"state lineage must be a string of 1 to {limits.LINEAGE_MAX} characters", pointer="/data/attributes/state"
        )
    outputs = parse_outputs(doc.get("outputs") or {})
    resources = tuple(_instances(doc.get("resources") or []))
    fmt = doc.get("version")
    return ParsedState(
        serial=serial,
        lineage=lineage,
        format_version=fmt if isinstance(fmt, int) else 4,
        terraform_version=str(doc.get("terraform_version") or ""),
        outputs=outputs,
        resources=resources,
        summary=summarize(doc.get("resources") or []),
    )


def parse_outputs(outputs: Any) -> tuple[OutputValue, ...]:
    """State `outputs` (or a client's `json-state-outputs`): {name: {value, type, sensitive}}."""
    if not isinstance(outputs, dict):
        raise Invalid("outputs must be an object", pointer="/data/attributes/json-state-outputs")
    found = []
    for name, body in sorted(outputs.items()):
        if not isinstance(body, dict):
            continue
        if not name or len(str(name).encode("utf-8", "surrogatepass")) > limits.OUTPUT_NAME_MAX_BYTES:
            raise Invalid(
                f"an output name must be 1 to {limits.OUTPUT_NAME_MAX_BYTES} bytes long",
                pointer="/data/attributes/json-state-outputs",
            )
        detailed = body.get("type", _infer_type(body.get("value")))
        found.append(
            OutputValue(
                name=str(name),
                sensitive=bool(body.get("sensitive", False)),
                type=simple_type(detailed),
                detailed_type=detailed,
                value=body.get("value"),
            )
        )
    return tuple(found)


def simple_type(detailed: Any) -> str:
    if detailed in ("string", "number"):
        return str(detailed)
    if detailed == "bool":
        return "boolean"
    if isinstance(detailed, list) and detailed:
        return "array" if detailed[0] in ("list", "set", "tuple") else "object"
    return "string" if detailed == "dynamic" else "null" if detailed is None else "object"


def _infer_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return ["tuple", [_infer_type(v) for v in value]]
    if isinstance(value, dict):
        return ["object", {k: _infer_type(v) for k, v in value.items()}]
    return "dynamic"


def provider_name(raw: str) -> str:
    """`provider["registry.terraform.io/hashicorp/aws"]` -> `hashicorp/aws`."""
    inner = raw.split('["', 1)[1].split('"]', 1)[0] if '["' in raw else raw.removeprefix("provider.")
    parts = inner.split("/")
    return "/".join(parts[-2:]) if len(parts) >= 2 else inner


def _index_suffix(key: Any) -> str:
    if key is None:
        return ""
    return f"[{key}]" if isinstance(key, int) else f"[{json.dumps(key)}]"


def _shape(res: dict[str, Any]) -> tuple[str, str, list[Any]]:
    """A state resource's mode, module and instances, with anything malformed read as absent."""
    mode, module, instances = res.get("mode"), res.get("module"), res.get("instances")
    return (
        mode if isinstance(mode, str) else "managed",
        module if isinstance(module, str) and module else "root",
        instances if isinstance(instances, list) else [],
    )


def _instances(resources: Any) -> list[ResourceInstance]:
    found: list[ResourceInstance] = []
    if not isinstance(resources, list):
        return found
    for res in resources:
        if not isinstance(res, dict) or not isinstance(res.get("type"), str) or not isinstance(res.get("name"), str):
            continue
        mode, module, instances = _shape(res)
        base = (
            ("" if module == "root" else f"{module}.")
            + ("data." if mode == "data" else "")
            + f"{res['type']}.{res['name']}"
        )
        for inst in instances:
            if not isinstance(inst, dict):
                continue
            key = inst.get("index_key")
            if len((base + _index_suffix(key)).encode("utf-8", "surrogatepass")) > limits.STATE_ADDRESS_MAX_BYTES:
                raise Invalid(
                    f"a resource address in the state is longer than {limits.STATE_ADDRESS_MAX_BYTES} bytes",
                    pointer="/data/attributes/state",
                )
            attrs = inst.get("attributes") or {}
            ids = tuple(str(attrs[k]) for k in ("id", "arn") if isinstance(attrs, dict) and attrs.get(k))
            digest = md5_hex(json.dumps(inst, sort_keys=True, default=str).encode())
            found.append(
                ResourceInstance(
                    address=base + _index_suffix(key),
                    name=res["name"],
                    type=res["type"],
                    mode=mode,
                    module=module,
                    provider=provider_name(str(res.get("provider", ""))),
                    name_index=None if key is None else str(key),
                    ids=ids,
                    digest=digest,
                )
            )
    return found


def summarize(resources: Any) -> dict[str, Any]:
    """The `modules`, `providers` and `resources` attributes of a state version."""
    modules: dict[str, dict[str, int]] = {}
    providers: dict[str, dict[str, int]] = {}
    listed: list[dict[str, Any]] = []
    for res in resources if isinstance(resources, list) else []:
        if not isinstance(res, dict) or not isinstance(res.get("type"), str):
            continue
        mode, module, instances = _shape(res)
        kind = ("data." if mode == "data" else "") + res["type"].replace("_", "-")
        provider = str(res.get("provider", ""))
        count = len(instances)
        modules.setdefault(module, {}).setdefault(kind, 0)
        modules[module][kind] += count
        providers.setdefault(provider, {}).setdefault(kind, 0)
        providers[provider][kind] += count
        listed.append(
            {"name": res.get("name"), "type": res["type"], "count": count, "module": module, "provider": provider}
        )
    return _bounded({"modules": modules, "providers": providers, "resources": listed})


def _bounded(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary lives in the state version's record: past STATE_SUMMARY_MAX_BYTES its lists are cut (a
    quarter of the budget for modules, a quarter for providers, half for resources). The state stays whole."""
    budget = limits.STATE_SUMMARY_MAX_BYTES
    if limits.json_bytes(summary) <= budget:
        return summary
    shares = {"modules": budget // 4, "providers": budget // 4, "resources": budget // 2}
    cut: dict[str, Any] = {"modules": {}, "providers": {}, "resources": []}
    for part, share in shares.items():
        entries = summary[part].items() if isinstance(summary[part], dict) else enumerate(summary[part])
        used = 0
        for key, value in entries:
            used += limits.json_bytes([key, value])
            if used > share:
                break
            if isinstance(cut[part], dict):
                cut[part][key] = value
            else:
                cut[part].append(value)
    return cut


def with_serial(raw: bytes, serial: int) -> bytes:
    """A copy of a state with a new serial (rollback makes an old state current again)."""
    doc = load_json(raw)
    doc["serial"] = serial
    return (json.dumps(doc, indent=2) + "\n").encode()
