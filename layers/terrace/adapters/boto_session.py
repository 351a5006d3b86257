"""The boto3 session of Terrace's AWS adapters: its botocore reads a pruned copy of botocore's endpoints file.

botocore parses its whole `data/endpoints.json` (~1.2 MB, every service of every partition) before the first
client of a session, a fixed part of each Lambda cold start. The copy holds every partition with only the
services Terrace makes clients of (`SERVICES`), each entry as botocore has it, so those clients resolve the same
endpoints. It is derived from botocore, so it is never committed: `make install` writes it beside this module
(`python -m terrace.adapters.boto_session`) and the Lambda layer's bundling (`infra/bundling.py`) from the layer's
own botocore. It lives in a folder named after the botocore version it came from (`botocore_data/<version>/`), so
a different botocore never reads it; without it, botocore loads its own file as usual.

Beside it, each of `SERVICES`' latest API model (`<service>/<version>/service-2.json`) without its documentation
strings (`undocumented`): botocore reads them only to write docstrings, and they are most of a model (DynamoDB's:
556 KB, 113 KB without; gzipped, which costs its unzipping too). Its first client, on the API Lambda's first
request, parses a fifth of the JSON. The loader searches this folder first; every other file (the paginators, the
waiters, the models' sdk-extras) is botocore's own.

Its loader also skips botocore's listing of every service it knows (~450 folders, ~13 ms of CPU for each model type)
before loading a model of one of `SERVICES`: it checks that service's own folders (`_Loader`).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any

from botocore.loaders import Loader

DATA_ROOT = Path(__file__).with_name("botocore_data")
# every service a client is made of: wiring/aws_adapters.py, adapters/secrets.py, functions/*/handler.py (and
# what botocore itself may call on their behalf: sts for assumed roles)
SERVICES = frozenset({"dynamodb", "s3", "sqs", "kms", "ecs", "ses", "ssm", "lambda", "secretsmanager", "sts", "logs"})


def prune(endpoints: dict[str, Any], services: frozenset[str] = SERVICES) -> dict[str, Any]:
    """`endpoints` (botocore's endpoints.json) with every partition and only `services` in each."""
    partitions = [
        {**partition, "services": {k: v for k, v in partition.get("services", {}).items() if k in services}}
        for partition in endpoints["partitions"]
    ]
    return {**endpoints, "partitions": partitions}


def undocumented(model: Any) -> Any:
    """`model` (a service's API model) without the documentation strings of its shapes and operations and its own,
    where they are read only to write docstrings. Everything else stays whole: botocore requires the documentation
    of other parts (`clientContextParams`: S3's endpoint resolution reads each one's)."""
    if not isinstance(model, dict):
        return model
    kept = {key: value for key, value in model.items() if key not in ("documentation", "documentationUrl")}
    for part in ("shapes", "operations"):
        if isinstance(kept.get(part), dict):
            kept[part] = {name: _without_docs(value) for name, value in kept[part].items()}
    return kept


def _without_docs(node: Any) -> Any:
    """`node` without every `documentation` or `documentationUrl` key whose value is a string (a member or a shape
    so named is a mapping, and stays)."""
    if isinstance(node, dict):
        return {
            key: _without_docs(value)
            for key, value in node.items()
            if not (key in ("documentation", "documentationUrl") and isinstance(value, str))
        }
    if isinstance(node, list):
        return [_without_docs(value) for value in node]
    return node


def latest_model(service_dir: Path) -> Path | None:
    """The service-2 model file of the latest API version in `service_dir` (botocore's choice: the greatest)."""
    if not service_dir.is_dir():
        return None
    versions = sorted(folder for folder in service_dir.iterdir() if any(folder.glob("service-2.json*")))
    if not versions:
        return None
    return next(versions[-1].glob("service-2.json*"))


def read_model(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def botocore_version(botocore_dir: Path) -> str:
    """The version of the botocore package in `botocore_dir`, read from its source (not imported)."""
    found = re.search(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", (botocore_dir / "__init__.py").read_text(), re.M)
    if found is None:
        raise ValueError(f"no __version__ in {botocore_dir / '__init__.py'}")
    return found.group(1)


def write_pruned(botocore_dir: Path, data_root: Path = DATA_ROOT) -> Path:
    """Write the pruned endpoints file and the undocumented models of the botocore in `botocore_dir` under
    `data_root`; the endpoints file's path."""
    target_dir = data_root / botocore_version(botocore_dir)
    target_dir.mkdir(parents=True, exist_ok=True)
    for service in sorted(SERVICES):
        model = latest_model(botocore_dir / "data" / service)
        if model is not None:
            _write(target_dir / service / model.parent.name / "service-2.json", undocumented(read_model(model)))
    target = target_dir / "endpoints.json"  # last: its presence makes the folder used (data_path)
    _write(target, prune(json.loads((botocore_dir / "data" / "endpoints.json").read_text())))
    return target


def _write(target: Path, data: Any) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_text(json.dumps(data, separators=(",", ":")))
    partial.replace(target)


def data_path(data_root: Path = DATA_ROOT) -> Path | None:
    """The folder holding the pruned endpoints file of the botocore this process runs, if it was written."""
    import botocore

    folder = data_root / botocore.__version__
    return folder if (folder / "endpoints.json").is_file() else None


def session(region: str | None = None, data_root: Path = DATA_ROOT) -> Any:
    """A boto3 session in `region` whose botocore reads the pruned endpoints file when there is one."""
    import boto3
    import botocore.session

    core = botocore.session.get_session()
    folder = data_path(data_root)
    if folder is not None:  # searched before botocore's own data (and any AWS_DATA_PATH, kept after it)
        others = core.get_config_variable("data_path")
        core.set_config_variable("data_path", os.pathsep.join([str(folder), *([others] if others else [])]))
    core.lazy_register_component("data_loader", lambda: _Loader.create(core.get_config_variable("data_path")))
    return boto3.session.Session(region_name=region, botocore_session=core)


class _Loader(Loader):
    """botocore's loader, save that loading a model of one of `SERVICES` checks only that service's folders where
    botocore first lists every service it knows (to refuse an unknown one). Any other service, or one without the
    model asked for, goes through botocore's own check and its errors."""

    @classmethod
    def create(cls, search_path: str | None) -> _Loader:
        """As `botocore.loaders.create_loader` makes its loader from the `data_path` setting."""
        paths = (
            [os.path.expanduser(os.path.expandvars(p)) for p in search_path.split(os.pathsep)] if search_path else None
        )
        return cls(extra_search_paths=paths)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loading = threading.local()  # the service whose model this thread is loading

    def load_service_model(self, service_name: str, type_name: str, api_version: str | None = None) -> Any:
        self._loading.service = service_name
        try:
            return super().load_service_model(service_name, type_name, api_version)
        finally:
            self._loading.service = None

    def list_available_services(self, type_name: str) -> list[str]:
        service = getattr(self._loading, "service", None)
        if service in SERVICES and self._offers(service, type_name):
            return [service]
        listed: list[str] = super().list_available_services(type_name)
        return listed

    def _offers(self, service: str, type_name: str) -> bool:
        """Whether a version of `service` in the search paths has a `type_name` model."""
        for folder in self._potential_locations(service, must_exist=True, is_dir=True):
            if any(self.file_loader.exists(os.path.join(folder, v, type_name)) for v in os.listdir(folder)):
                return True
        return False


def main() -> None:
    import botocore

    print(write_pruned(Path(botocore.__file__).parent), file=sys.stderr)


if __name__ == "__main__":
    main()
