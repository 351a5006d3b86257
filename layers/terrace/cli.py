"""The `terrace` operator CLI: run the local stack, and administer users, tokens and organizations.

Admin commands act on the table named by the TERRACE_* environment (Settings.from_env); with none
set they use the dev stack described by .terrace/dev.json. Every command delegates to the services.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import TYPE_CHECKING, Annotated

import typer

from terrace.domain.errors import Conflict, Invalid, NotFound

if TYPE_CHECKING:
    from terrace.bootstrap import Container

app = typer.Typer(help="Terrace: a self-hosted Terraform Cloud.", no_args_is_help=True, add_completion=False)
org_app = typer.Typer(help="Organizations.", no_args_is_help=True)
token_app = typer.Typer(help="API tokens.", no_args_is_help=True)
user_app = typer.Typer(help="Users.", no_args_is_help=True)
app.add_typer(org_app, name="org")
app.add_typer(token_app, name="token")
app.add_typer(user_app, name="user")


def _container() -> Container:
    from terrace.bootstrap import build_aws
    from terrace.config import Settings
    from terrace.local.stack import DUMMY_AWS_ENV, read_dev_env

    env = dict(os.environ)
    if "TERRACE_TABLE" not in env:
        dev_env = read_dev_env()
        if not dev_env:
            raise _fail("no TERRACE_TABLE in the environment and no running dev stack (.terrace/dev.json)")
        os.environ.update({k: v for k, v in DUMMY_AWS_ENV.items() if k not in os.environ})
        env.update(dev_env)
    return build_aws(Settings.from_env(env))


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=1)


@app.command()
def dev(
    port: Annotated[int, typer.Option(envvar="TERRACE_PORT", help="HTTPS port of the API.")] = 8443,
    organization: Annotated[str, typer.Option(envvar="TERRACE_ORGANIZATION")] = "acme",
) -> None:
    """Run the whole system locally (moto + API over HTTPS) until Ctrl-C."""
    from terrace.local.stack import LocalStack
    from terrace.local.usage import usage

    stack = LocalStack(port=port, organization=organization, access_log=True)
    try:
        info = stack.start()
    except RuntimeError as exc:
        stack.stop()
        raise _fail(str(exc)) from exc
    os.environ.update(stack.env())  # child processes (runners) see the same stack
    typer.echo(usage(info, str(stack.dev_file)))
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    typer.echo("stopping...")
    stack.stop()


@user_app.command("create")
def user_create(
    username: str,
    email: Annotated[str, typer.Option()] = "",
    site_admin: Annotated[bool, typer.Option("--site-admin")] = False,
) -> None:
    """Create a user."""
    try:
        user = _container().accounts.create_user(username, email, site_admin=site_admin)
    except (Conflict, Invalid) as exc:
        raise _fail(str(exc)) from exc
    typer.echo(f"created user {user.username} ({user.id}){' [site admin]' if user.site_admin else ''}")


@token_app.command("create")
def token_create(
    user: Annotated[str, typer.Option("--user", help="Username the token acts as.")],
    description: Annotated[str, typer.Option()] = "created by terrace token create",
) -> None:
    """Issue a user API token; the secret is printed once and never stored."""
    from terrace.domain.principal import PrincipalKind

    container = _container()
    found = container.accounts.find_user(user)
    if found is None:
        raise _fail(f"no user named {user!r}")
    issued = container.accounts.issue_token(PrincipalKind.USER, found.id, description=description)
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

    container = _container()
    found = container.accounts.find_user(owner)
    if found is None:
        raise _fail(f"no user named {owner!r}")
    principal = Principal(PrincipalKind.USER, found.id, found.username, site_admin=found.site_admin)
    try:
        org = container.organizations.create(principal, name, email)
    except (Conflict, Invalid, NotFound) as exc:
        raise _fail(str(exc)) from exc
    typer.echo(f"created organization {org.name} ({org.id}) owned by {found.username}")


def main() -> None:
    app()
