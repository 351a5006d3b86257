"""The repository clone port with git (`repository_clone.py`): a shallow fetch of one commit and of its submodules,
recursively, into a job folder of its own, packed as a forge's tarball is.

Every `git` runs through `tenant_process.py: run_program` (CPU, memory, file-size and time bounds; its own session
killed at the end; as root, all of them as one uid leased for the clone, `tenant_identity.py`, owner of the job
folder) with an environment built from nothing: `PATH`, a `HOME` inside the job folder, no system or
global configuration, no terminal prompt, and the configuration below as `GIT_CONFIG_*` variables (never on the
command line, which other processes can read):

- only the http and https protocols (no `file://`, `ssh`, `ext::`), no redirects;
- every URL git may reach (the repository's, each submodule's after it is resolved against its parent's) is
  checked first as any outbound request is (`domain/destinations.py`: a private, loopback or link-local address
  only where the deployment allows it), and git is pinned to the checked address (`http.curloptResolve`), so DNS
  cannot swap in an inward one afterwards;
- the credential is an `Authorization` header scoped to the repository's own URL (`http.<url>.extraHeader`): a
  submodule elsewhere never gets it.

The checkout is bounded as it grows (each file by the file-size limit, the folder between steps, the whole by a
deadline) and packed without `.git` and without links (as `services/vcs/archives.py` reads a forge's tarball)."""

from __future__ import annotations

import base64
import io
import os
import posixpath
import shutil
import tempfile
import time
from pathlib import Path
from urllib.parse import urljoin

from terrace.adapters import tenant_identity
from terrace.adapters.httpx_outbound import Resolver, system_resolver
from terrace.adapters.repository_clone import CloneError, CloneRequest
from terrace.adapters.tenant_identity import Identity
from terrace.adapters.tenant_process import Limits, run_program
from terrace.domain.bounded_tar import write_tar
from terrace.domain.destinations import Allowance, address_class, blocked_address, check_url
from terrace.domain.errors import Invalid

DEPTH_MAX = 3  # submodules of submodules of submodules
SUBMODULES_MAX = 50
MEMORY_BYTES = 512 * 1024 * 1024
OUTPUT_KEPT = 2000


class GitRepositoryClone:
    def __init__(self, allowance: Allowance, resolver: Resolver = system_resolver, git: str | None = None) -> None:
        self._allowance, self._resolver = allowance, resolver
        self._git = git or shutil.which("git") or "/usr/bin/git"

    def clone(self, request: CloneRequest) -> bytes:
        deadline = time.monotonic() + request.timeout_s
        pins = [self._pin(request.url)]
        with tempfile.TemporaryDirectory(prefix="terrace-clone-") as job, tenant_identity.lease() as identity:
            home, tree = Path(job) / "home", Path(job) / "tree"
            home.mkdir()
            if identity is not None:  # every git step runs as the lease's uid, in a folder only it (and root) reach
                for folder in (job, home):
                    os.chown(folder, identity.uid, identity.uid)
            auth = base64.b64encode(f"x-access-token:{request.credential}".encode()).decode()
            secret = [(f"http.{request.url}.extraHeader", f"Authorization: Basic {auth}")]
            run = _Runner(self._git, home, request, deadline, secret, identity)
            run(pins, Path(job), "init", "--quiet", str(tree))
            run(pins, tree, "fetch", "--quiet", "--no-tags", "--depth", "1", request.url, request.sha)
            run(pins, tree, "checkout", "--quiet", "--detach", request.sha)
            self._submodules(run, pins, tree, request.url, 1)
            return _pack(tree, request)

    def _submodules(self, run: _Runner, pins: list[str], folder: Path, url: str, level: int) -> None:
        if not (folder / ".gitmodules").is_file():
            return
        if level > DEPTH_MAX:
            raise CloneError(f"submodules are nested deeper than {DEPTH_MAX} levels")
        listed = run(pins, folder, "config", "--file", ".gitmodules", "--get-regexp", r"^submodule\..*\.(url|path)$")
        entries: dict[str, dict[str, str]] = {}
        for line in listed.splitlines():
            key, _, value = line.partition(" ")
            name, _, field = key.removeprefix("submodule.").rpartition(".")
            entries.setdefault(name, {})[field] = value
        if len(entries) > SUBMODULES_MAX:
            raise CloneError(f"the repository has more than {SUBMODULES_MAX} submodules")
        resolved: dict[str, tuple[str, str]] = {}
        for name, entry in entries.items():
            raw, path = entry.get("url", ""), entry.get("path", "")
            # a relative URL (`../other.git`) is relative to the parent's own URL, as git resolves it
            absolute = urljoin(url.rstrip("/") + "/", raw) if raw.startswith(("./", "../")) else raw
            pins.append(self._pin(absolute, f"submodule {name}"))
            resolved[name] = (absolute, path)
        for name, (absolute, path) in resolved.items():
            run(pins, folder, "config", f"submodule.{name}.url", absolute)
            run(pins, folder, "submodule", "update", "--init", "--depth", "1", "--", path)
        for _name, (absolute, path) in resolved.items():
            self._submodules(run, pins, folder / path, absolute, level + 1)

    def _pin(self, url: str, what: str = "the repository") -> str:
        """`host:port:address` for `http.curloptResolve`, once `url` passed the destination checks."""
        try:
            destination = check_url(url, "url", self._allowance)
        except Invalid as exc:
            raise CloneError(f"{what}'s URL {url!r} is refused: {exc.detail}") from exc
        try:
            addresses = list(self._resolver(destination.host, destination.port))
        except (OSError, UnicodeError) as exc:
            raise CloneError(f"{what}'s host {destination.host} cannot be resolved: {exc}") from exc
        for address in addresses:
            if blocked_address(address, destination.host, self._allowance):
                raise CloneError(f"{what}'s host {destination.host} resolves to a {address_class(address)} address, "
                                 "which this server does not reach")  # fmt: skip
        if not addresses:
            raise CloneError(f"{what}'s host {destination.host} has no address")
        shown = f"[{addresses[0]}]" if addresses[0].version == 6 else str(addresses[0])
        return f"{destination.host}:{destination.port}:{shown}"


class _Runner:
    """One `git` step under the job's deadline and bounds; its output, or CloneError."""

    def __init__(
        self,
        git: str,
        home: Path,
        request: CloneRequest,
        deadline: float,
        secret: list[tuple[str, str]],
        identity: Identity | None,
    ) -> None:
        self._git, self._home, self._request, self._deadline, self._secret = git, home, request, deadline, secret
        self._identity = identity
        self._job = home.parent

    def __call__(self, pins: list[str], cwd: Path, *args: str) -> str:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise CloneError(f"the clone took longer than {self._request.timeout_s:.0f} s")
        config = [("protocol.allow", "never"), ("protocol.http.allow", "always"),
                  ("protocol.https.allow", "always"), ("http.followRedirects", "false"),
                  ("core.hooksPath", "/dev/null"), ("credential.helper", ""), ("submodule.recurse", "false"),
                  *self._secret, *(("http.curloptResolve", pin) for pin in pins)]  # fmt: skip
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self._home), "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0", "GIT_ALLOW_PROTOCOL": "http:https",
               "LC_ALL": "C", "GIT_CONFIG_COUNT": str(len(config))}  # fmt: skip
        for i, (key, value) in enumerate(config):
            env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
        limits = Limits(cpu_s=max(1, int(left)), memory_bytes=MEMORY_BYTES, timeout_s=left)
        outcome = run_program(
            [self._git, *args], env, str(cwd), limits, self._request.max_bytes, identity=self._identity
        )
        output = outcome.stdout.decode(errors="replace").replace(self._request.credential, "***")
        if outcome.stopped is not None:
            raise CloneError(f"git {args[0]} was stopped ({outcome.stopped})")
        if outcome.returncode != 0:
            raise CloneError(f"git {args[0]} failed: {output.strip()[-OUTPUT_KEPT:]}")
        if _size(self._job) > 2 * self._request.max_bytes:
            raise CloneError(f"the repository is larger than {self._request.max_bytes} bytes")
        return output


def _size(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def _pack(tree: Path, request: CloneRequest) -> bytes:
    """The checkout as a .tar.gz under `repo/`, without `.git` and links, within the request's bounds."""
    out, count, total = io.BytesIO(), 0, 0
    with write_tar(out) as tar:
        for root, dirs, files in os.walk(tree):
            dirs[:] = sorted(d for d in dirs if d != ".git" and not os.path.islink(os.path.join(root, d)))
            relative = os.path.relpath(root, tree)
            for name in sorted(files):
                path = os.path.join(root, name)
                if name == ".git" or os.path.islink(path) or not os.path.isfile(path):
                    continue
                count, total = count + 1, total + os.lstat(path).st_size
                if count > request.max_files or total > request.max_bytes:
                    raise CloneError(f"the repository holds more than {request.max_files} files or "
                                     f"{request.max_bytes} bytes")  # fmt: skip
                member = posixpath.join("repo", "" if relative == "." else relative.replace(os.sep, "/"), name)
                tar.add(member, Path(path).read_bytes(), 0o755 if os.access(path, os.X_OK) else 0o644)
    return out.getvalue()
