"""The operator's admin commands (`terrace user`, `token`, `org`, `workload-identity`) and how every command that
acts on a deployment finds it.

They act on what the TERRACE_* environment names (Settings.from_env: a data directory, or an AWS table); with none
set they use the running dev stack described by .terrace/dev.json. Every command delegates to the services.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Annotated

import typer

from terrace.domain.errors import Conflict, Invalid, NotFound

if TYPE_CHECKING:
    from terrace.bootstrap import Container

org_app = typer.Typer(help="Organizations.", no_args_is_help=True)
token_app = typer.Typer(help="API tokens.", no_args_is_help=True)
user_app = typer.Typer(help="Users.", no_args_is_help=True)
identity_app = typer.Typer(help="The workload identity issuer's signing keys.", no_args_is_help=True)


def deployment() -> Container:
    from terrace.bootstrap import build_aws, build_embedded
    from terrace.config import ConfigurationError, Settings
    from terrace.local.dev_file import dev_stack_running, read_dev_env
    from terrace.local.stack import DUMMY_AWS_ENV

    env = dict(os.environ)
    if "TERRACE_TABLE" not in env and "TERRACE_DATA_DIR" not in env:
        dev_env = read_dev_env()
        if not dev_env:
            raise fail("no TERRACE_DATA_DIR or TERRACE_TABLE in the environment and no dev stack (.terrace/dev.json)")
        if not dev_stack_running():
            raise fail("the dev stack in .terrace/dev.json is not running; start it with 'make dev'")
        os.environ.update({k: v for k, v in DUMMY_AWS_ENV.items() if k not in os.environ})
        env.update(dev_env)
    try:
        settings = Settings.from_env(env)
    except ConfigurationError as exc:
        raise fail(str(exc)) from None
    return build_embedded(settings) if settings.data_dir else build_aws(settings)


def fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=1)


@user_app.command("create")
def user_create(
    username: str,
    email: Annotated[str, typer.Option()] = "",
    site_admin: Annotated[bool, typer.Option("--site-admin")] = False,
) -> None:
    """Create a user."""
    try:
        user = deployment().accounts.create_user(username, email, site_admin=site_admin)
    except (Conflict, Invalid) as exc:
        raise fail(str(exc)) from exc
    typer.echo(f"created user {user.username} ({user.id}){' [site admin]' if user.site_admin else ''}")


@token_app.command("create")
def token_create(
    user: Annotated[str, typer.Option("--user", help="Username the token acts as.")],
    description: Annotated[str, typer.Option()] = "created by terrace token create",
) -> None:
    """Issue a user API token; the secret is printed once and never stored."""
    from terrace.domain.principal import PrincipalKind

    container = deployment()
    found = container.accounts.find_user(user)
    if found is None:
        raise fail(f"no user named {user!r}")
    try:  # a suspended user gets no token
        issued = container.accounts.issue_token(PrincipalKind.USER, found.id, description=description)
    except Conflict as exc:
        raise fail(str(exc)) from exc
    typer.echo(f"token {issued.token.id} for {found.username} (shown once):", err=True)
    typer.echo(issued.secret)


@org_app.command("create")
def org_create(
    name: str,
    email: Annotated[str, typer.Option(help="Contact address of the organization.")],
    owner: Annotated[str, typer.Option(help="Username of the first owner.")],
) -> None:
    """Create an organization owned by an existing user."""
    from terrace.domain.principal import Principal, PrincipalKind

    container = deployment()
    found = container.accounts.find_user(owner)
    if found is None:
        raise fail(f"no user named {owner!r}")
    principal = Principal(PrincipalKind.USER, found.id, found.username, site_admin=found.site_admin)
    try:
        org = container.organizations.create(principal, name, email)
    except (Conflict, Invalid, NotFound) as exc:
        raise fail(str(exc)) from exc
    typer.echo(f"created organization {org.name} ({org.id}) owned by {found.username}")


@identity_app.command("rotate")
def identity_rotate(
    grace_hours: Annotated[float, typer.Option(help="Keep the old keys published this much longer.")] = 0.0,
) -> None:
    """Start a key rotation: a new key is published now and signs two minutes later; the old keys stay published
    until every token they signed has expired (the phase deadline, plus the grace), then they are deleted."""
    issuer = deployment().workload_issuer
    key = issuer.rotate(grace_s=grace_hours * 3600)
    typer.echo(f"new signing key {key.kid}: published now, signs from {time.ctime(key.signs_from)}")
    for old in issuer.keys():
        if old.retire_at is not None:
            typer.echo(f"key {old.kid} retires at {time.ctime(old.retire_at)}")


@identity_app.command("keys")
def identity_keys() -> None:
    """List the signing keys (ids and dates; never their private half) and delete those past retirement."""
    issuer = deployment().workload_issuer
    for kid in issuer.retire():
        typer.echo(f"key {kid} retired and deleted")
    for key in issuer.keys():
        retires = f", retires {time.ctime(key.retire_at)}" if key.retire_at is not None else ""
        typer.echo(f"key {key.kid}: signs from {time.ctime(key.signs_from)}{retires}")
