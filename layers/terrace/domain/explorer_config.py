"""What a configuration uses, from its root module's documents in python-hcl2's shape (the HCL reader's, or a
`.tf.json` file reshaped by `json_blocks`): its module calls and its providers (`required_providers`, each with
its constraint and the exact version its `.terraform.lock.hcl` selected when the configuration carries one)."""

from __future__ import annotations

from typing import Any

from terrace.domain.explorer import USES_MAX, Use, module_name, provider_key

LOCK_FILE = ".terraform.lock.hcl"
RELEVANT = ("module", "required_providers")  # a `.tf` file naming neither is not worth parsing for the explorer


def json_blocks(document: Any) -> dict[str, Any]:
    """A `.tf.json` document's `module` and `terraform` blocks in python-hcl2's shape."""
    if not isinstance(document, dict):
        return {}
    shaped: dict[str, Any] = {}
    modules = document.get("module")
    if isinstance(modules, dict):
        shaped["module"] = [{label: body} for label, body in modules.items()]
    terraform = document.get("terraform")
    for block in terraform if isinstance(terraform, list) else [terraform]:
        if isinstance(block, dict) and isinstance(block.get("required_providers"), dict):
            shaped.setdefault("terraform", []).append({"required_providers": [block["required_providers"]]})
    return shaped


def installed_modules(manifest: Any) -> dict[str, str]:
    """Root module call -> the exact version `terraform init` installed, from `.terraform/modules/modules.json`
    (a configuration the CLI uploads carries it): `{"Modules": [{"Key": "network", "Version": "3.19.0"}, ...]}`."""
    listed = manifest.get("Modules") if isinstance(manifest, dict) else None
    found: dict[str, str] = {}
    for entry in listed if isinstance(listed, list) else []:
        key = entry.get("Key") if isinstance(entry, dict) else None
        version = entry.get("Version") if isinstance(entry, dict) else None
        if isinstance(key, str) and key and "." not in key and isinstance(version, str) and version:
            found[key] = version[:64]
    return found


def configuration_uses(
    documents: dict[str, dict[str, Any]], installed: dict[str, str] | None = None
) -> tuple[tuple[Use, ...], tuple[Use, ...]]:
    """(modules, providers) of a root module's documents (file name -> document), each sorted and bounded. A
    module call `installed` names has that exact version (its configuration's constraint kept beside it)."""
    modules: dict[tuple[str, str], Use] = {}
    required: dict[str, Use] = {}
    locked: dict[str, str] = {}
    for name in sorted(documents):
        document = documents[name]
        if name.endswith(LOCK_FILE):
            for address, body in _blocks(document, "provider"):
                locked[provider_key(address)] = _text(body.get("version"))
            continue
        for call, body in _blocks(document, "module"):
            source = _text(body.get("source"))
            if source:
                constraint = _text(body.get("version")) or _git_ref(source)
                version = (installed or {}).get(call) or constraint
                modules.setdefault((source, version), Use(module_name(source), source, version, constraint))
        for local_name, spec in _required_providers(document):
            source = _text(spec.get("source")) if isinstance(spec, dict) else ""
            constraint = _text(spec.get("version")) if isinstance(spec, dict) else _text(spec)
            source = source or f"hashicorp/{local_name}"  # terraform's implied source of a bare local name
            name = provider_key(source).split("/")[-1]
            required.setdefault(provider_key(source), Use(name, source, constraint, constraint))
    for key, version in locked.items():
        use = required.get(key) or Use(key.split("/")[-1], key)
        required[key] = Use(use.name, use.source, version or use.version, use.constraint)
    ordered = lambda uses: tuple(sorted(uses, key=lambda u: (u.source, u.version))[:USES_MAX])  # noqa: E731
    return ordered(modules.values()), ordered(required.values())


def _required_providers(document: dict[str, Any]) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    terraform = document.get("terraform")
    for block in terraform if isinstance(terraform, list) else []:
        lists = block.get("required_providers") if isinstance(block, dict) else None
        for entry in lists if isinstance(lists, list) else []:
            if isinstance(entry, dict):
                found.extend((str(k), v) for k, v in entry.items() if not str(k).startswith("__"))
    return found


def _blocks(document: dict[str, Any], kind: str) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    blocks = document.get(kind)
    for block in blocks if isinstance(blocks, list) else []:
        if isinstance(block, dict):
            found.extend((_text(k), v) for k, v in block.items() if isinstance(v, dict))
    return found


def _git_ref(source: str) -> str:
    """The `ref` of a git source (`git::https://host/vpc.git?ref=v1.2.0`), the version it pins."""
    query = source.split("?", 1)[1] if "?" in source else ""
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if key == "ref":
            return value
    return ""


def _text(value: Any) -> str:
    """A string attribute as written (python-hcl2 keeps the quotes of a literal); empty for anything else."""
    if not isinstance(value, str):
        return ""
    text = value.strip()
    text = text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text
    return text[:256]
