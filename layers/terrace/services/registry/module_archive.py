"""Reading an uploaded module version's `.tar.gz`: is it a module, and what the UI shows of it.

Nothing is written to disk: `domain/bounded_tar.py` reads the files in memory within the bounds below, each member
through tarfile's `data` filter. A module has at least one `.tf` or `.tf.json` file at its root. Its README
(`README.md` at the root) and the root's variables, outputs and resources are read for the UI: `.tf.json` here,
`.tf` by the HCL reader port (`adapters/hcl_reader.py`: python-hcl2 in a bounded child process, up to a budget of
bytes, CPU and time per upload, never in this process); a file it cannot read, or past the budget, is left out of
those lists, never a reason to refuse a module terraform reads.
"""

from __future__ import annotations

import json
from typing import Any

from terrace.adapters.hcl_reader import HclReader
from terrace.domain.bounded_tar import TarBounds, read_files
from terrace.domain.errors import Invalid
from terrace.domain.registry_modules import ModuleContents

ARCHIVE_MAX_BYTES = 50 * 1024 * 1024  # the compressed tarball
BOUNDS = TarBounds("a module version", ARCHIVE_MAX_BYTES, files_max=5000, total_max=200 * 1024 * 1024)
PARSED_MAX_BYTES = 512 * 1024  # a root .tf file larger than this is not parsed for the UI
README_MAX_CHARS = 64 * 1024
ROOT = "/module"
README_NAMES = ("README.md", "README", "readme.md", "Readme.md")


def read_module(raw: bytes, hcl: HclReader) -> ModuleContents:
    """What the module holds, or Invalid naming why the tarball is not a module."""
    root_files = read_files(raw, BOUNDS, ROOT, lambda name: "/" not in name and _interesting(name), mode="r:gz")
    if not any(name.endswith((".tf", ".tf.json")) for name in root_files):
        raise Invalid("not a module: no .tf or .tf.json file at the archive's root")
    return _contents(root_files, hcl)


def _interesting(name: str) -> bool:
    return name.endswith((".tf", ".tf.json")) or name in README_NAMES


def _contents(files: dict[str, bytes], hcl: HclReader) -> ModuleContents:
    readme = next((files[n] for n in README_NAMES if n in files), b"").decode("utf-8", "replace")
    contents = ModuleContents(readme=readme[:README_MAX_CHARS])
    documents = _parse(files, hcl)
    for name in sorted(documents):
        document = documents[name]
        _variables(document, contents.inputs)
        _outputs(document, contents.outputs)
        _resources(document, contents.resources)
    return contents


def _parse(files: dict[str, bytes], hcl: HclReader) -> dict[str, dict[str, Any]]:
    """The documents of the root's `.tf.json` (read here) and `.tf` files (by the HCL reader, all at once)."""
    documents: dict[str, dict[str, Any]] = {}
    texts: dict[str, str] = {}
    for name in sorted(files):
        body = files[name]
        if not name.endswith((".tf", ".tf.json")) or len(body) > PARSED_MAX_BYTES:
            continue
        try:
            text = body.decode("utf-8")
            if name.endswith(".json"):
                document = json.loads(text)
                documents[name] = _json_blocks(document) if isinstance(document, dict) else {}
            else:
                texts[name] = text
        except ValueError:  # not UTF-8, not JSON: only the UI's lists are shorter
            continue
    if texts:
        documents.update(hcl.parse(texts).documents)
    return documents


def _json_blocks(document: dict[str, Any]) -> dict[str, Any]:
    """A `.tf.json` file's blocks in python-hcl2's shape (a list of one-key objects per block type)."""
    shaped: dict[str, Any] = {}
    for kind in ("variable", "output", "resource"):
        value = document.get(kind)
        if isinstance(value, dict):
            shaped[kind] = [{key: body} for key, body in value.items()]
    return shaped


def _blocks(document: dict[str, Any], kind: str) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for block in document.get(kind, []) if isinstance(document.get(kind), list) else []:
        if isinstance(block, dict):
            found.extend((_unquote(key), body) for key, body in block.items())
    return found


def _variables(document: dict[str, Any], into: list[dict[str, Any]]) -> None:
    for name, body in _blocks(document, "variable"):
        body = body if isinstance(body, dict) else {}
        into.append(
            {
                "name": name,
                "type": _expression(body.get("type", "any")),
                "description": _unquote(body.get("description", "")),
                "default": json.dumps(_value(body["default"])) if "default" in body else None,
                "required": "default" not in body,
                "sensitive": body.get("sensitive") is True,
            }
        )


def _outputs(document: dict[str, Any], into: list[dict[str, Any]]) -> None:
    for name, body in _blocks(document, "output"):
        body = body if isinstance(body, dict) else {}
        into.append(
            {
                "name": name,
                "description": _unquote(body.get("description", "")),
                "sensitive": body.get("sensitive") is True,
            }
        )


def _resources(document: dict[str, Any], into: list[dict[str, Any]]) -> None:
    for kind, body in _blocks(document, "resource"):
        for name in body if isinstance(body, dict) else {}:
            if not name.startswith("__"):  # python-hcl2's markers (`__is_block__`)
                into.append({"type": kind, "name": _unquote(name)})


def _expression(value: Any) -> str:
    """A type constraint as written: python-hcl2 wraps a call (`list(string)`) as `${list(string)}`."""
    text = _unquote(value)
    return text[2:-1] if text.startswith("${") and text.endswith("}") else text


def _value(value: Any) -> Any:
    """A default as the value it is: python-hcl2 keeps each string's quotes (`"dev"`), in lists and maps too,
    and names a map's keys as written; shown as JSON (a string quoted, `null`, numbers and booleans bare)."""
    if isinstance(value, str):
        return _unquote(value)
    if isinstance(value, list):
        return [_value(item) for item in value]
    if isinstance(value, dict):
        return {_unquote(key): _value(item) for key, item in value.items() if not str(key).startswith("__")}
    return value


def _unquote(value: Any) -> str:
    text = "" if value is None else str(value)
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text
