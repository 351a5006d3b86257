"""The API Lambda's cold path loads no heavy module it does not need (`python -m bench --only cold_start` times it).

Checked in a fresh interpreter: importing `functions/api/handler.py` builds nothing and loads no Powertools,
building the Lambda's lazy app imports no router and no service (each is imported on the first request that needs
it), and building the app still leaves out Powertools, the X-Ray SDK (opt-in, `TERRACE_XRAY_SDK`), single
sign-on's Authlib, joserfc and requests (loaded when an issuer is configured), the outbound client httpx (at the
first delivery), the policy engine and the embedded server's and tests' packages."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "aws_lambda_powertools",
    "aws_xray_sdk",
    "authlib",
    "joserfc",
    "requests",
    "httpx",
    "regopy",
    "hcl2",
    "moto",
    "uvicorn",
    "aws_cdk",
)

PROBE = """
import importlib.util, json, sys
heavy = json.loads(sys.argv[2])
spec = importlib.util.spec_from_file_location("api_handler", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
at_import = sorted(m for m in sys.modules if m.split(".")[0] in heavy or m.startswith(("terrace", "fastapi")))
from terrace.bootstrap import build_memory
from terrace.web.app import create_app
create_app(build_memory(), lazy=True)
lazy = ("terrace.web.routers.", "terrace.web.ui.", "terrace.services.")
at_lazy_app = sorted(m for m in sys.modules if m.startswith(lazy) and not m.endswith("__init__"))
create_app(build_memory())
at_app = sorted({m.split(".")[0] for m in sys.modules} & set(heavy))
embedded = sorted({"sqlite3", "terrace.adapters.fs_blobs", "terrace.web.blob_urls"} & set(sys.modules))
print(json.dumps({"import": at_import, "lazy_app": at_lazy_app, "app": at_app, "embedded": embedded}))
"""


def probe(extra_env: dict[str, str] | None = None) -> dict[str, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TERRACE_", "POWERTOOLS_"))}
    env.update({"PYTHONPATH": str(ROOT / "layers"), "AWS_LAMBDA_FUNCTION_NAME": "terrace-api", **(extra_env or {})})
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "functions" / "api" / "handler.py"), json.dumps(HEAVY)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    found: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_the_api_handler_imports_nothing_heavy_and_builds_nothing_at_import():
    found = probe()
    assert found["import"] == [], f"imported by functions/api/handler.py at import time: {found['import']}"
    assert found["app"] == [], f"imported on the way to the first request: {found['app']}"
    # the lazy app imports a router, a page or a service when a request first needs it (the wiring imports each
    # service where it builds it): building it imports only the UI's error pages and what its middleware uses
    middleware = {"terrace.services.access.grants", "terrace.services.access.actions",
                  "terrace.services.access.permissions", "terrace.services.audit_scope"}  # fmt: skip
    assert set(found["lazy_app"]) - {"terrace.services.access"} == {"terrace.web.ui.error_pages"} | middleware, found
    # the embedded server's blob folder, its URLs and SQLite are loaded only where its adapters are
    assert found["embedded"] == [], found["embedded"]


def _fresh_handler(name: str) -> Any:
    """`functions/api/handler.py` loaded anew under `name`, as Lambda loads it."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "functions" / "api" / "handler.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_xray_sdk_is_loaded_only_when_asked_for(monkeypatch):
    module = _fresh_handler("api_handler_traced")

    def serve(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"statusCode": 200}

    assert module._traced(serve) is serve
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")  # the tracer is built, its recorder sends nothing
    monkeypatch.setenv("TERRACE_XRAY_SDK", "true")
    traced = module._traced(serve)
    assert traced is not serve and traced({}, SimpleNamespace()) == {"statusCode": 200}


def test_the_powertools_logger_is_loaded_only_to_log_events(monkeypatch, capsys):
    module = _fresh_handler("api_handler_logged")

    def serve(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"statusCode": 200}

    assert module._logged(serve) is serve
    monkeypatch.setenv("POWERTOOLS_LOGGER_LOG_EVENT", "true")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "terrace-api")
    logged = module._logged(serve)
    context = SimpleNamespace(
        function_name="terrace-api",
        memory_limit_in_mb=1024,
        aws_request_id="r-7",
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:terrace-api",
    )
    assert logged is not serve and logged({"rawPath": "/logged-path"}, context) == {"statusCode": 200}
    assert "/logged-path" in capsys.readouterr().out
