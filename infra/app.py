"""Entry point of the CDK app (cdk.json: `.venv/bin/python infra/app.py`)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Run as a script, this folder would shadow top-level packages (e.g. `constructs`): import from the repo root.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "infra"]
sys.path.insert(0, str(REPO))

import aws_cdk as cdk  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from infra.stack import TerraceStack  # noqa: E402


def add_nag(app: cdk.App) -> None:
    """cdk-nag AwsSolutions as a policy-validation plugin: synth fails on any unacknowledged error."""
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))


def build(app: cdk.App) -> TerraceStack:
    stack = TerraceStack(app, app.node.try_get_context("terrace:stackName") or "Terrace")
    if app.node.try_get_context("terrace:nag") not in (False, "false"):
        add_nag(app)
    return stack


if __name__ == "__main__":
    app = cdk.App()
    build(app)
    app.synth()
