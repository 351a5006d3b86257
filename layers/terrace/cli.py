"""The `terrace` operator CLI: run the server (`serve`, `dev`), an agent, a backup or a migration here; the admin
commands on users, tokens, organizations and signing keys are in `cli_admin.py`, the tool catalog's in
`cli_tools.py`.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from terrace.cli_admin import fail as _fail
from terrace.cli_admin import identity_app, org_app, token_app, user_app
from terrace.cli_tools import tools_app

if TYPE_CHECKING:
    from terrace.local.stack import LocalStack

DEV_OUTBOUND_ALLOW = ("127.0.0.0/8", "::1", "localhost")  # `terrace dev`: notifications may reach this machine
HYOK_KEY_FILE_HELP = "Hold Your Own Key: the JSON file of the customers' keys (docs/features/hyok.md)."

app = typer.Typer(help="Terrace: a self-hosted Terraform Cloud.", no_args_is_help=True, add_completion=False)
app.add_typer(org_app, name="org")
app.add_typer(token_app, name="token")
app.add_typer(user_app, name="user")
app.add_typer(identity_app, name="workload-identity")
app.add_typer(tools_app, name="tools")


@app.command()
def dev(
    port: Annotated[int, typer.Option(envvar="TERRACE_PORT", help="HTTPS port of the API.")] = 8443,
    organization: Annotated[str, typer.Option(envvar="TERRACE_ORGANIZATION")] = "acme",
    moto: Annotated[bool, typer.Option("--moto", help="Run on a fresh moto (the AWS adapters); data is lost.")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="Start with empty data (.terrace/data is removed).")] = False,
    hyok_key_file: Annotated[Path | None, typer.Option(envvar="TERRACE_HYOK_KEY_FILE", help=HYOK_KEY_FILE_HELP)] = None,
) -> None:
    """Run the whole system locally until Ctrl-C: the embedded server on .terrace/data (kept across restarts),
    or with --moto the AWS adapters against a moto server."""
    from terrace.local.stack import LocalStack

    data_dir = None if moto else Path(".terrace") / "data"
    if fresh and data_dir is not None:
        _remove_data(data_dir)
    stack = LocalStack(port=port, organization=organization, access_log=True, data_dir=data_dir)
    stack.settings_overrides["outbound_allow"] = DEV_OUTBOUND_ALLOW  # a receiver on this machine works
    # health assessments every few minutes, not daily, so drift shows while trying it out
    stack.settings_overrides["assessment_interval_s"] = int(os.environ.get("TERRACE_ASSESSMENT_INTERVAL_S", "300"))
    stack.settings_overrides.update(_ip_ranges())
    stack.settings_overrides["hyok_key_file"] = str(hyok_key_file) if hyok_key_file else None
    from terrace.local.release_reach import dev_tool_downloads

    stack.settings_overrides["tool_downloads"], unreachable = dev_tool_downloads(os.environ)
    if unreachable:
        typer.echo(f"the release mirror {unreachable} cannot be reached from here: runs use the terraform and OpenTofu"
                   " versions this machine holds (TERRACE_TOOL_DOWNLOADS=true fetches anyway)", err=True)  # fmt: skip
    _run(stack)


def _ip_ranges() -> dict[str, str]:
    """The deployment's own addresses, as its operator gives them (TERRACE_IP_RANGES_*: domain/ip_ranges.py)."""
    names = ("ip_ranges_api", "ip_ranges_notifications", "ip_ranges_sentinel", "ip_ranges_vcs")
    return {name: os.environ[f"TERRACE_{name.upper()}"] for name in names if os.environ.get(f"TERRACE_{name.upper()}")}


def agent_key_wrapper(env: Mapping[str, str]) -> Any:
    """How an agent reaches customers' keys (Hold Your Own Key): the key file on its host (TERRACE_HYOK_KEY_FILE),
    else AWS KMS as the customer's role (AWS_REGION; TERRACE_HYOK_KMS_ENDPOINT for a KMS-compatible endpoint)."""
    if env.get("TERRACE_HYOK_KEY_FILE"):
        from terrace.adapters.file_key_wrapper import FileKeyWrapper

        return FileKeyWrapper(env["TERRACE_HYOK_KEY_FILE"])
    from terrace.adapters.kms_key_wrapper import KmsKeyWrapper

    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    return KmsKeyWrapper(region=region, endpoint_url=env.get("TERRACE_HYOK_KMS_ENDPOINT") or None)


@app.command()
def agent(
    token: Annotated[str, typer.Option("--token", help="An agent pool token (TFC_AGENT_TOKEN).")] = "",
    address: Annotated[str, typer.Option("--address", help="Terrace's URL (TFC_ADDRESS).")] = "",
    name: Annotated[str, typer.Option("--name", help="This agent's name (TFC_AGENT_NAME; the host name).")] = "",
    single: Annotated[bool, typer.Option("--single", help="Run one job, then exit (TFC_AGENT_SINGLE).")] = False,
    log_level: Annotated[str, typer.Option("--log-level", help="trace, debug, info, warn, error.")] = "",
    auto_update: Annotated[str, typer.Option("--auto-update", help="Accepted and ignored (tfc-agent's).")] = "",
    allow_insecure_loopback: Annotated[
        bool,
        typer.Option(
            "--allow-insecure-loopback",
            envvar="TERRACE_AGENT_ALLOW_INSECURE_LOOPBACK",
            help="Allow a plain http TFC_ADDRESS on this machine's loopback (a local test server); never elsewhere.",
        ),
    ] = False,
    hyok_key_file: Annotated[
        str, typer.Option(envvar="TERRACE_HYOK_KEY_FILE", help="Hold Your Own Key: the key file on this host.")
    ] = "",
    hyok_kms_endpoint: Annotated[
        str,
        typer.Option(
            envvar="TERRACE_HYOK_KMS_ENDPOINT",
            help="Hold Your Own Key without a key file: a KMS-compatible endpoint (default: AWS KMS of AWS_REGION).",
        ),
    ] = "",
) -> None:
    """Run a self-hosted agent of an agent pool: it executes the runs of the pool's workspaces on this machine,
    reaching Terrace's URL outbound only; settings as tfc-agent's (TFC_AGENT_TOKEN, TFC_ADDRESS, ...)."""
    from terrace.runner import agent as agent_program
    from terrace.runner.config import ConfigError

    del auto_update  # the agent is upgraded with Terrace's package or image
    try:
        options = agent_program.options_from(
            os.environ,
            token=token,
            address=address,
            name=name,
            single=single or None,
            log_level=log_level,
            allow_insecure_loopback=allow_insecure_loopback,
        )
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=2) from None
    keys = {**os.environ, "TERRACE_HYOK_KEY_FILE": hyok_key_file, "TERRACE_HYOK_KMS_ENDPOINT": hyok_kms_endpoint}
    raise typer.Exit(agent_program.serve(options, key_wrapper=agent_key_wrapper(keys)))


@app.command()
def serve(
    data: Annotated[Path, typer.Option("--data", help="Data directory (created if missing).")],
    port: Annotated[int, typer.Option(envvar="TERRACE_PORT", help="HTTPS port.")] = 8443,
    host: Annotated[str, typer.Option(envvar="TERRACE_HOST", help="Address to listen on.")] = "127.0.0.1",
    public_url: Annotated[
        str, typer.Option(envvar="TERRACE_PUBLIC_URL", help="How clients reach it (default https://localhost:PORT).")
    ] = "",
    organization: Annotated[str, typer.Option(envvar="TERRACE_ORGANIZATION")] = "acme",
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Start with empty data (DIR's data files are removed).")
    ] = False,
    tls_cert: Annotated[
        Path | None, typer.Option(envvar="TERRACE_TLS_CERT", help="PEM certificate chain (else a local CA's).")
    ] = None,
    tls_key: Annotated[Path | None, typer.Option(envvar="TERRACE_TLS_KEY", help="PEM key of --tls-cert.")] = None,
    tls_ca: Annotated[
        Path | None, typer.Option(envvar="TERRACE_TLS_CA", help="CA bundle runners trust (default: public roots).")
    ] = None,
    outbound_allow: Annotated[
        str,
        typer.Option(
            envvar="TERRACE_OUTBOUND_ALLOW",
            help="Hosts and networks (comma-separated) notifications and run tasks may reach although private.",
        ),
    ] = "",
    hyok_key_file: Annotated[Path | None, typer.Option(envvar="TERRACE_HYOK_KEY_FILE", help=HYOK_KEY_FILE_HELP)] = None,
) -> None:
    """Run Terrace on one machine until SIGTERM/Ctrl-C: API, UI, runners, reaper and events in one process,
    everything kept in DATA (SQLite, blobs, keys)."""
    from terrace.local import tls
    from terrace.local.stack import LocalStack

    if bool(tls_cert) != bool(tls_key):
        raise _fail("--tls-cert and --tls-key go together")
    try:
        files = tls.operator_certificate(tls_cert, tls_key, tls_ca) if tls_cert and tls_key else None
    except RuntimeError as exc:
        raise _fail(str(exc)) from exc
    if fresh:
        _remove_data(data)
    stack = LocalStack(
        port=port,
        organization=organization,
        access_log=True,
        state_dir=data,
        data_dir=data,
        host=host,
        public_url=public_url or None,
        tls_files=files,
    )
    stack.settings_overrides["outbound_allow"] = tuple(entry for entry in outbound_allow.split(",") if entry.strip())
    stack.settings_overrides.update(_ip_ranges())
    stack.settings_overrides["hyok_key_file"] = str(hyok_key_file) if hyok_key_file else None
    _run(stack)


@app.command()
def backup(
    data: Annotated[Path, typer.Option("--data", help="Data directory of the server (it may be serving).")],
    out: Annotated[Path, typer.Argument(help="A new directory for the copy.")],
) -> None:
    """A consistent copy of a data directory while it serves: SQLite's online backup, then the blobs and keys.
    Start a server on the copy with `terrace serve --data OUT`."""
    from terrace.local.backup import BackupError, backup_data

    try:
        summary = backup_data(data, out)
    except BackupError as exc:
        raise _fail(str(exc)) from exc
    typer.echo(summary)


@app.command()
def migrate(
    source: Annotated[str, typer.Option("--from", help="The source server's URL (https://app.terraform.io).")],
    source_token: Annotated[str, typer.Option("--from-token", envvar="TERRACE_MIGRATE_FROM_TOKEN")],
    organization: Annotated[str, typer.Option("--organization", help="The organization to move (same name).")],
    target: Annotated[str, typer.Option("--to", help="The target's URL (default: the running dev stack).")] = "",
    target_token: Annotated[str, typer.Option("--to-token", envvar="TERRACE_MIGRATE_TO_TOKEN")] = "",
    workspaces: Annotated[str, typer.Option("--workspaces", help="Only workspaces matching this glob.")] = "*",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan; write nothing.")] = False,
    state: Annotated[str, typer.Option("--state", help="all: every state version; current: the latest.")] = "all",
    report: Annotated[Path | None, typer.Option("--report", help="Write the JSON report to this file.")] = None,
    ca_bundle: Annotated[list[str] | None, typer.Option("--ca-bundle", help="Extra CA (PEM) to trust.")] = None,
) -> None:
    """Copy an organization from any TFC-compatible server (HCP Terraform, TFE, OTF, Terrace) through the API:
    settings, projects, workspaces, variables, state history, variable sets, teams, run triggers, notifications,
    policies and policy sets, registry modules and their versions (SSH keys are listed for re-entry).
    Idempotent: re-run it to resume after a failure."""
    from terrace.migrate.command import Endpoints, dev_target
    from terrace.migrate.command import migrate as run_migration
    from terrace.migrate.engine import Options

    if state not in ("all", "current"):
        raise _fail("--state is all or current")
    bundles = list(ca_bundle or [])
    if not target:
        target, dev_token, dev_ca = dev_target()
        target_token, bundles = target_token or dev_token, [*bundles, dev_ca]
        if not target:
            raise _fail("no --to and no running dev stack (.terrace/dev.json)")
    if not target_token:
        raise _fail("--to-token is required")
    endpoints = Endpoints(source, source_token, target, target_token, bundles)
    options = Options(organization=organization, workspaces=workspaces, dry_run=dry_run, state=state)
    raise typer.Exit(run_migration(endpoints, options, report))


def _remove_data(data_dir: Path) -> None:
    from terrace.local.backup import remove_data

    remove_data(data_dir)


def _run(stack: LocalStack) -> None:
    from terrace.local.usage import usage

    try:
        info = stack.start()
    except RuntimeError as exc:
        stack.stop()
        raise _fail(str(exc)) from exc
    os.environ.update(stack.env())  # child processes see the same stack
    os.environ.pop("TERRACE_URL_SIGNING_SECRET", None)  # read into the settings: no process started inherits it
    typer.echo(usage(info, str(stack.dev_file), kept=stack.data_dir is not None))
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    started = time.monotonic()
    typer.echo("stopping...")
    stack.stop()
    typer.echo(f"stopped in {time.monotonic() - started:.1f} s")


def main() -> None:
    app()
