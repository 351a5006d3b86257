"""The program `kill_server.ProofServer` and `kill_server.MotoProcess` start in a child process, which the proofs
kill with SIGKILL: the stack `terrace serve --data DIR` runs (`LocalStack` on a data directory, `cli._run`), with the
test's settings (`terrace serve` reads no job timings from its environment); or that stack on the AWS adapters
against an external moto (`_on_moto`: the resources are created once, then found again after a kill); or the moto
server itself.

`python kill_server_program.py DATA PORT ORGANIZATION SETTINGS_JSON [MOTO_ENDPOINT]`, or
`python kill_server_program.py moto PORT` for the moto server (with the presigned-URL check of `terrace dev --moto`).
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any


def _moto(port: int) -> None:
    from terrace.local.moto_twin import moto_server

    server = moto_server("127.0.0.1", port)
    server.start()
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    server.stop()


def _on_moto(data: Path, endpoint: str, **kwargs: Any) -> Any:
    """LocalStack on an external moto: the resources are created once, then found again after a kill."""
    from terrace.local.stack import LocalStack
    from terrace.wiring.local_resources import LocalResources, create_resources

    class OnMoto(LocalStack):
        def _build_moto(self, public_url: str) -> Any:
            import secrets as random_secrets

            from terrace.bootstrap import build_aws
            from terrace.config import Settings
            from terrace.local.stack import LOCAL_REGION

            saved = data / "resources.json"
            if saved.exists():
                self.resources = LocalResources(**json.loads(saved.read_text()))
            else:
                self.resources = create_resources(endpoint, "proof")
                saved.write_text(json.dumps(self.resources.__dict__))
            secret_file = data / "url-signing.secret"
            if not secret_file.exists():
                secret_file.write_text(random_secrets.token_urlsafe(32))
            settings = Settings(
                **self.resources.settings_fields(),
                public_url=public_url,
                region=LOCAL_REGION,
                aws_endpoint_url=endpoint,
                url_signing_secret=secret_file.read_text(),
                **self._overrides(),
            )
            return build_aws(settings)

    return OnMoto(data_dir=None, **kwargs)


def main(argv: list[str]) -> None:
    from terrace.cli import _run
    from terrace.local.stack import LocalStack

    if argv[0] == "moto":
        _moto(int(argv[1]))
        return
    data, port, organization, settings = Path(argv[0]), int(argv[1]), argv[2], json.loads(argv[3])
    common = {"port": port, "organization": organization, "access_log": False, "state_dir": data, "host": "127.0.0.1"}
    if len(argv) > 4:
        stack = _on_moto(data, argv[4], **common)
    else:
        from kill_commit import wrap_ports_from_env  # the outbox proof's kill between a commit and its publish

        stack = LocalStack(data_dir=data, wrap_ports=wrap_ports_from_env(), **common)
    stack.settings_overrides.update(
        {key: tuple(value) if isinstance(value, list) else value for key, value in settings.items()}
    )
    _run(stack)


if __name__ == "__main__":
    main(sys.argv[1:])
