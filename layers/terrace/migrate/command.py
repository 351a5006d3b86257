"""`terrace migrate`: wire the two API clients, run the migration, print the summary, save the JSON report."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from terrace.local.dev_file import DEV_FILE
from terrace.migrate.client import Api, ApiError, ssl_context
from terrace.migrate.engine import Migration, Options
from terrace.migrate.report import Report


@dataclass
class Endpoints:
    source_url: str
    source_token: str
    target_url: str
    target_token: str
    ca_bundles: list[str]


def dev_target(state_dir: Path = Path(".terrace")) -> tuple[str, str, str]:
    """The running dev stack's url, token and CA bundle (its dev.json), for a migration without --to."""
    path = state_dir / DEV_FILE
    if not path.exists():
        return "", "", ""
    info = json.loads(path.read_text())
    return str(info.get("url") or ""), str(info.get("token") or ""), str(info.get("ca_bundle") or "")


def migrate(endpoints: Endpoints, options: Options, report_path: Path | None, out: TextIO | None = None) -> int:
    """0 when everything moved (or the plan was printed), 1 when something failed (the report says what)."""
    out = out or sys.stdout  # looked up per call: a test's captured stdout
    verify = ssl_context([b for b in endpoints.ca_bundles if b])
    source = Api("source", endpoints.source_url, endpoints.source_token, verify)
    target = Api("target", endpoints.target_url, endpoints.target_token, verify)
    report = Report(endpoints.source_url, endpoints.target_url, options.organization, options.dry_run, out=out)
    mode = "plan (dry run, nothing is written)" if options.dry_run else "migrating"
    print(f"{mode}: {options.organization} from {source.url} to {target.url}", file=out, flush=True)
    code = 0
    try:
        Migration(source, target, options, report).run()
        failures = report.counts().get("fail", 0)
        report.status = "failed" if failures else "planned" if options.dry_run else "done"
        if failures:
            report.error, code = f"{failures} object(s) failed: see the actions marked fail", 1
    except (ApiError, OSError, ValueError) as exc:  # httpx's transport errors are OSErrors' cousins below
        report.status, report.error, code = "failed", str(exc), 1
    except Exception as exc:  # noqa: BLE001 (an HTTP transport error: the report still records what moved)
        report.status, report.error, code = "failed", f"{type(exc).__name__}: {exc}", 1
    finally:
        source.close()
        target.close()
        if report_path is not None:
            report.save(report_path)
    print(report.summary(), file=out, flush=True)
    if report.error:
        print(f"error: {report.error}\nre-run the same command to resume.", file=out, flush=True)
    return code
