"""The Sentinel mock files of a plan export (`sentinel-mock-bundle-v0`), written from a plan's JSON
(`terraform show -json`, redacted) and its run, as HCP Terraform writes them for the Sentinel CLI.

Each file is one import's documented namespace: `tfplan/v2` (terraform_version, variables, planned_values,
resource_changes, resource_drift, output_changes, raw), `tfconfig/v2` (providers, resources, provisioners,
variables, outputs, module_calls and its `strip_index` function), `tfstate/v2` (terraform_version, outputs,
resources, raw: the plan's prior state) and `tfrun` (the run, its workspace, organization and project, the names
of its variables but never their values). `sentinel.hcl` maps each import to its file. Pure: no I/O but the
bundle's tar.gz, written in memory.
"""

from __future__ import annotations

import io
from typing import Any

from terrace.domain.bounded_tar import write_tar
from terrace.domain.sentinel_syntax import module

TFPLAN, TFCONFIG, TFSTATE, TFRUN = (
    "mock-tfplan-v2.sentinel",
    "mock-tfconfig-v2.sentinel",
    "mock-tfstate-v2.sentinel",
    "mock-tfrun.sentinel",
)
MOCKS = {"tfplan/v2": TFPLAN, "tfconfig/v2": TFCONFIG, "tfstate/v2": TFSTATE, "tfrun": TFRUN}
CONFIG = "sentinel.hcl"
TFCONFIG_KEYS = ("providers", "resources", "provisioners", "variables", "outputs", "module_calls")

STRIP_INDEX = """strip_index = func(addr) {
\ts = strings.split(addr, ".")
\tfor s as i, v {
\t\ts[i] = strings.split(v, "[")[0]
\t}
\treturn strings.join(s, ".")
}
"""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _prefixed(module_address: str, name: str) -> str:
    return f"{module_address}:{name}" if module_address else name


def _resources(module_values: dict[str, Any]) -> dict[str, Any]:
    """Every resource of a `values` module tree (planned values, prior state), keyed by address."""
    found: dict[str, Any] = {}
    module_address = str(module_values.get("address", ""))
    for resource in _list(module_values.get("resources")):
        resource = _dict(resource)
        address = str(resource.get("address", ""))
        if resource.get("deposed_key"):
            address = f"{address}:{resource['deposed_key']}"
        found[address] = {
            "address": resource.get("address"),
            "module_address": module_address,
            "mode": resource.get("mode"),
            "type": resource.get("type"),
            "name": resource.get("name"),
            "index": resource.get("index"),
            "provider_name": resource.get("provider_name"),
            "values": resource.get("values", {}),
            "depends_on": resource.get("depends_on", []),
            "tainted": bool(resource.get("tainted", False)),
            "deposed_key": resource.get("deposed_key", ""),
        }
    for child in _list(module_values.get("child_modules")):
        found.update(_resources(_dict(child)))
    return found


def _outputs(values: dict[str, Any]) -> dict[str, Any]:
    return {
        str(name): {"name": name, "sensitive": bool(_dict(o).get("sensitive")), "value": _dict(o).get("value")}
        for name, o in _dict(values.get("outputs")).items()
    }


def _changes(changes: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for change in _list(changes):
        change = _dict(change)
        address = str(change.get("address", ""))
        if change.get("deposed"):
            address = f"{address}:{change['deposed']}"
        found[address] = {
            key: change.get(key)
            for key in ("address", "module_address", "mode", "type", "name", "index", "provider_name")
        } | {"module_address": change.get("module_address", ""), "deposed": change.get("deposed", "")}
        found[address]["change"] = _dict(change.get("change"))
    return found


def tfplan_v2(plan: dict[str, Any]) -> str:
    planned = _dict(plan.get("planned_values"))
    return module(
        {
            "terraform_version": plan.get("terraform_version", ""),
            "variables": {
                str(name): {"name": name, "value": _dict(v).get("value")}
                for name, v in _dict(plan.get("variables")).items()
            },
            "planned_values": {
                "outputs": _outputs(planned),
                "resources": _resources(_dict(planned.get("root_module"))),
            },
            "resource_changes": _changes(plan.get("resource_changes")),
            "resource_drift": _changes(plan.get("resource_drift")),
            "output_changes": {
                str(name): {"name": name, "change": change}
                for name, change in _dict(plan.get("output_changes")).items()
            },
            "raw": plan,
        }
    )


def tfstate_v2(plan: dict[str, Any]) -> str:
    prior = _dict(plan.get("prior_state"))
    values = _dict(prior.get("values"))
    return module(
        {
            "terraform_version": prior.get("terraform_version", plan.get("terraform_version", "")),
            "outputs": _outputs(values),
            "resources": _resources(_dict(values.get("root_module"))),
            "raw": prior,
        }
    )


def _config_module(found: dict[str, dict[str, Any]], config: dict[str, Any], address: str) -> None:
    for resource in _list(config.get("resources")):
        resource = _dict(resource)
        resource_address = f"{address}.{resource.get('address')}" if address else str(resource.get("address"))
        provisioners = []
        for index, provisioner in enumerate(_list(resource.get("provisioners"))):
            provisioner = _dict(provisioner)
            entry = {
                "resource_address": resource_address,
                "type": provisioner.get("type"),
                "index": str(index),
                "config": _dict(provisioner.get("expressions")),
            }
            provisioners.append(entry)
            found["provisioners"][f"{resource_address}:{index}"] = entry
        found["resources"][resource_address] = {
            "address": resource_address,
            "module_address": address,
            "mode": resource.get("mode"),
            "type": resource.get("type"),
            "name": resource.get("name"),
            "provider_config_key": resource.get("provider_config_key"),
            "provisioners": provisioners,
            "config": _dict(resource.get("expressions")),
            "count": _dict(resource.get("count_expression")),
            "for_each": _dict(resource.get("for_each_expression")),
            "depends_on": _list(resource.get("depends_on")),
        }
    for name, variable in _dict(config.get("variables")).items():
        variable = _dict(variable)
        found["variables"][_prefixed(address, name)] = {
            "module_address": address,
            "name": name,
            "default": variable.get("default"),
            "description": variable.get("description", ""),
        }
    for name, output in _dict(config.get("outputs")).items():
        output = _dict(output)
        found["outputs"][_prefixed(address, name)] = {
            "module_address": address,
            "name": name,
            "sensitive": bool(output.get("sensitive", False)),
            "value": _dict(output.get("expression")),
            "description": output.get("description", ""),
            "depends_on": _list(output.get("depends_on")),
        }
    for name, call in _dict(config.get("module_calls")).items():
        call = _dict(call)
        found["module_calls"][_prefixed(address, name)] = {
            "module_address": address,
            "name": name,
            "source": call.get("source", ""),
            "version_constraint": call.get("version_constraint", ""),
            "config": _dict(call.get("expressions")),
            "count": _dict(call.get("count_expression")),
            "for_each": _dict(call.get("for_each_expression")),
            "depends_on": _list(call.get("depends_on")),
        }
        child = f"{address}.module.{name}" if address else f"module.{name}"
        _config_module(found, _dict(call.get("module")), child)


def tfconfig_v2(plan: dict[str, Any]) -> str:
    configuration = _dict(plan.get("configuration"))
    found: dict[str, dict[str, Any]] = {key: {} for key in TFCONFIG_KEYS}
    for key, provider in _dict(configuration.get("provider_config")).items():
        provider = _dict(provider)
        found["providers"][str(key)] = {
            "provider_config_key": key,
            "name": provider.get("name"),
            "full_name": provider.get("full_name", ""),
            "alias": provider.get("alias", ""),
            "module_address": provider.get("module_address", ""),
            "version_constraint": provider.get("version_constraint", ""),
            "config": _dict(provider.get("expressions")),
        }
    _config_module(found, _dict(configuration.get("root_module")), "")
    return module(dict(found), imports=("strings",), functions=STRIP_INDEX)


def tfrun(run: dict[str, Any]) -> str:
    """`run`: the tfrun namespace's values, as the service gathers them (`services/runs/plan_exports.py`)."""
    return module(run)


def sentinel_hcl() -> str:
    return "".join(
        f'mock "{name}" {{\n  module {{\n    source = "{path}"\n  }}\n}}\n\n' for name, path in MOCKS.items()
    )


def files(plan: dict[str, Any], run: dict[str, Any]) -> dict[str, str]:
    """The bundle's files by name."""
    return {
        TFPLAN: tfplan_v2(plan),
        TFCONFIG: tfconfig_v2(plan),
        TFSTATE: tfstate_v2(plan),
        TFRUN: tfrun(run),
        CONFIG: sentinel_hcl(),
    }


def bundle(plan: dict[str, Any], run: dict[str, Any]) -> bytes:
    """The bundle as HCP serves it: a tar.gz of the files, at its root."""
    out = io.BytesIO()
    with write_tar(out) as tar:
        for name, text in files(plan, run).items():
            tar.add(name, text.encode())
    return out.getvalue()
