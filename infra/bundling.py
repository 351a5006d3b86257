"""Lambda code and layer assets, built without Docker.

The `terrace` layer is the package under layers/ plus its dependencies as Lambda-compatible wheels
(manylinux, arm64, the Lambda's Python) installed by pip on the synthesizing machine. Installed
dependencies are cached under .build/ keyed by the dependency list, so a second synth installs nothing.
With `terrace:skipBundling` (tests) the sources are staged as they are and nothing is downloaded.

The layer carries bytecode for the Lambda's Python only, built by that Python found on this machine
(`lambda_python`); without one the synth fails (`BytecodeError`). The bundled botocore keeps the data of the
services Terrace calls only.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from infra.settings import LAMBDA_PYTHON_VERSION

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".build" / "lambda-deps"
PLATFORM = "manylinux2014_aarch64"
# The Lambda's Python 3.12 runs on Amazon Linux 2023 (glibc 2.34): regopy ships manylinux_2_34 wheels only.
PLATFORMS = (PLATFORM, "manylinux_2_34_aarch64")
# boto3 is bundled too (the runtime has one, but the X-Ray SDK pulls in botocore, and a layer botocore
# must match its boto3): the pinned pair from pyproject wins. The tracer extra brings the X-Ray SDK.
RUNTIME_PROVIDED: set[str] = set()
SERVER_ONLY = {
    "uvicorn",
    "httptools",
    "uvloop",
    "typer",
    "trustme",
}  # the embedded server's; no Lambda imports them (cryptography stays: joserfc verifies OIDC ID tokens with it)
EXTRAS = {"aws-lambda-powertools": "tracer"}
LAMBDA_PYTHON_ENV = "TERRACE_LAMBDA_PYTHON"  # a Python of the Lambda's version, when none is found by itself
SOURCE_EXCLUDES = ["**/__pycache__", "**/*.pyc", "*.egg-info", "**/.mypy_cache"]


def layer_requirements(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """The package's runtime dependencies, minus what the Lambda runtime already has."""
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    requirements = []
    for dep in deps:
        name = dep.split("==")[0].split(">")[0].split("<")[0].split("[")[0].strip()
        if name.lower() in RUNTIME_PROVIDED or name.lower() in SERVER_ONLY:
            continue
        extra = EXTRAS.get(name.lower())
        requirements.append(dep.replace(name, f"{name}[{extra}]", 1) if extra else dep)
    return requirements


def pip_command(target: Path, requirements: list[str]) -> list[str]:
    return [
        sys.executable, "-m", "pip", "install", "-qq", "--disable-pip-version-check",
        *(arg for platform in PLATFORMS for arg in ("--platform", platform)),
        "--implementation", "cp", "--python-version", LAMBDA_PYTHON_VERSION,
        "--only-binary=:all:", "--cache-dir", str(REPO / ".build" / "pip-cache"),
        "--target", str(target), *requirements,
    ]  # fmt: skip


def _tree_digest(*roots: Path) -> str:
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(str(path.relative_to(REPO)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class LayerBundling:
    """Builds <output>/python = pip-installed dependencies + the terrace package + UI templates."""

    def __init__(self, requirements: list[str], run=subprocess.run) -> None:  # noqa: ANN001
        self.requirements = requirements
        self._run = run

    def deps_dir(self) -> Path:
        key = hashlib.sha256(" ".join([*PLATFORMS, LAMBDA_PYTHON_VERSION, *self.requirements]).encode()).hexdigest()
        return CACHE / key[:16]

    def try_bundle(self, output_dir: str, *, image: DockerImage = None, **_: object) -> bool:  # noqa: ARG002
        deps = self.deps_dir()
        if not (deps / ".complete").exists():
            staging = deps.with_suffix(".tmp")
            shutil.rmtree(staging, ignore_errors=True)
            self._run(pip_command(staging, self.requirements), check=True)
            shutil.rmtree(deps, ignore_errors=True)
            staging.rename(deps)
            (deps / ".complete").touch()
        site = Path(output_dir) / "python"
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")  # another Python's bytecode: never read there
        shutil.copytree(
            deps, site, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".complete", "__pycache__", "*.pyc")
        )
        terrace_ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "botocore_data")  # this machine's botocore's
        shutil.copytree(REPO / "layers" / "terrace", site / "terrace", dirs_exist_ok=True, ignore=terrace_ignore)
        if (REPO / "templates").is_dir():
            shutil.copytree(REPO / "templates", site / "templates", dirs_exist_ok=True, ignore=ignore)
        prune_endpoints(site)
        prune_botocore_data(site)
        compile_bytecode(site)
        return True


def prune_endpoints(site: Path) -> None:
    """The pruned copy of the bundled botocore's endpoints file and its services' models without their documentation,
    which the functions' boto3 session reads (terrace/adapters/boto_session.py: a cold start parses ~50 KB rather
    than botocore's ~1.2 MB, and DynamoDB's model in 113 KB rather than 556 KB)."""
    from terrace.adapters.boto_session import write_pruned

    write_pruned(site / "botocore", site / "terrace" / "adapters" / "botocore_data")


def prune_botocore_data(site: Path) -> None:
    """Drop the bundled botocore's data of every service no function makes a client of (`boto_session.SERVICES`):
    ~400 folders of models, paginators and waiters the layer would carry and never read. Its top-level files
    (endpoints, partitions, retry and defaults configuration) stay."""
    from terrace.adapters.boto_session import SERVICES

    data = site / "botocore" / "data"
    for folder in data.iterdir() if data.is_dir() else ():
        if folder.is_dir() and folder.name not in SERVICES:
            shutil.rmtree(folder)


class BytecodeError(RuntimeError):
    """The layer would ship without bytecode for the Lambda's Python: a cold start 4.4 times slower."""


def _python_version(python: str) -> str | None:
    try:
        answer = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            check=False, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except OSError:
        return None
    return answer.stdout.strip() if answer.returncode == 0 else None  # a pyenv shim of an unselected version: 127


def lambda_python(version: str = LAMBDA_PYTHON_VERSION) -> str | None:
    """A Python of the Lambda's version on this machine: `TERRACE_LAMBDA_PYTHON`, `python3.12` on PATH, a pyenv or
    uv installation of it, or a usual place; None when there is none."""
    candidates = [os.environ.get(LAMBDA_PYTHON_ENV), shutil.which(f"python{version}")]
    pyenv_root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates += sorted(map(str, pyenv_root.glob(f"versions/{version}.*/bin/python{version}")), reverse=True)
    if uv := shutil.which("uv"):
        found = subprocess.run([uv, "python", "find", version], check=False, capture_output=True, text=True)
        candidates.append(found.stdout.strip() if found.returncode == 0 else None)
    candidates += [f"{prefix}/bin/python{version}" for prefix in ("/usr", "/usr/local", "/opt/homebrew")]
    return next((c for c in candidates if c and _python_version(c) == version), None)


def compile_bytecode(site: Path, python: str | None = None) -> None:
    """Bytecode for the Lambda's Python, so a cold start does not compile every module it imports (the layer is
    read-only there: without it, each cold start compiled terrace and every dependency). Hash-checked-never
    bytecode, as the zip does not keep modification times; no bytecode of another Python (pip's own is the
    synthesizing Python's). Without that Python here the synth fails, rather than ship a layer 4.4 times slower
    to start."""
    python = python or lambda_python()
    if python is None:
        raise BytecodeError(
            f"the Lambda layer needs bytecode for Python {LAMBDA_PYTHON_VERSION}, which is not installed here: "
            f"install it (`uv python install {LAMBDA_PYTHON_VERSION}`, `pyenv install {LAMBDA_PYTHON_VERSION}`, "
            f"or your system's python{LAMBDA_PYTHON_VERSION}) or name it in {LAMBDA_PYTHON_ENV}"
        )
    for stale in site.rglob("__pycache__"):
        shutil.rmtree(stale, ignore_errors=True)
    subprocess.run(
        [python, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", str(site)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    tag = f"cpython-{LAMBDA_PYTHON_VERSION.replace('.', '')}"
    missing = [
        module
        for module in (site / "terrace").rglob("*.py")
        if not (module.parent / "__pycache__" / f"{module.stem}.{tag}.pyc").is_file()
    ]
    if missing:
        raise BytecodeError(f"{len(missing)} modules have no {tag} bytecode, e.g. {missing[0].relative_to(site)}")


def layer_code(skip_bundling: bool) -> lambda_.Code:
    if skip_bundling:
        return lambda_.Code.from_asset(str(REPO / "layers"), exclude=SOURCE_EXCLUDES)
    requirements = layer_requirements()
    sources = [REPO / "layers" / "terrace"] + ([REPO / "templates"] if (REPO / "templates").is_dir() else [])
    asset_hash = hashlib.sha256(
        " ".join([*PLATFORMS, LAMBDA_PYTHON_VERSION, *requirements, _tree_digest(*sources)]).encode()
    ).hexdigest()
    return lambda_.Code.from_asset(
        str(REPO / "layers"),
        asset_hash=asset_hash,
        asset_hash_type=AssetHashType.CUSTOM,
        bundling=BundlingOptions(
            # Never used: local bundling always succeeds or raises. CDK requires an image to be named.
            image=DockerImage.from_registry("unused-local-bundling-only"),
            local=LayerBundling(requirements),
        ),
    )


def function_code(name: str) -> lambda_.Code:
    """A thin handler folder under functions/; its imports come from the terrace layer."""
    return lambda_.Code.from_asset(str(REPO / "functions" / name), exclude=SOURCE_EXCLUDES)
