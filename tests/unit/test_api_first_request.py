"""What the API Lambda's first request skips stays invisible (`python -m bench --only cold_start` times it).

Each check runs in a fresh interpreter: FastAPI's route analysis answers its pydantic.v1 question without importing
pydantic.v1 (`web/fastapi_compat.py`) and still refuses a pydantic.v1 model once one can exist; the first request
through the lazy app loads neither pydantic.v1 nor what it leaves for other paths; the handler keeps the garbage
collector off on Lambda until its first invocation ends, answered or failed, and then freezes what it built."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def fresh(script: str, *args: str, env: dict[str, str] | None = None) -> Any:
    """The JSON `script` prints last, run in a new interpreter with the layer on its path."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("TERRACE_", "POWERTOOLS_", "AWS_LAMBDA"))}
    environ.update({"PYTHONPATH": str(ROOT / "layers"), **(env or {})})
    done = subprocess.run(
        [sys.executable, "-c", script, *args], env=environ, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


V1_CHECK = """
import json, sys, warnings
from fastapi import APIRouter
from fastapi._compat import shared
from fastapi.exceptions import FastAPIError
from terrace.web import fastapi_compat
fastapi_compat.install()
fastapi_compat.install()  # once only
wrapped = getattr(shared.is_pydantic_v1_model_class, fastapi_compat.MARK, None) is not None
router = APIRouter()
@router.post("/plain")
def plain(body: dict, items: list[int]) -> None: ...
unloaded = "pydantic.v1" not in sys.modules
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from pydantic import v1
class Old(v1.BaseModel):
    name: str
try:
    @router.post("/old")
    def old(body: Old) -> None: ...
    refused = False
except FastAPIError:
    refused = True
print(json.dumps({"wrapped": wrapped, "unloaded": unloaded, "refused": refused,
    "old": shared.is_pydantic_v1_model_class(Old), "in_list": shared.annotation_is_pydantic_v1(list[Old]),
    "plain": shared.is_pydantic_v1_model_class(dict)}))
"""


def test_routes_are_analysed_without_pydantic_v1_and_a_v1_model_is_still_refused():
    found = fresh(V1_CHECK)
    assert found == {"wrapped": True, "unloaded": True, "refused": True, "old": True, "in_list": True,
                     "plain": False}  # fmt: skip


FIRST_REQUEST = """
import json, sys
from mangum import Mangum
from terrace.bootstrap import build_memory
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app
container = build_memory()
user = container.accounts.create_user("admin", "a@example.com")
token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
path = "/api/v2/account/details"
event = {"version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "", "isBase64Encoded": False,
    "headers": {"host": "terrace.example.com", "authorization": f"Bearer {token}"},
    "requestContext": {"http": {"method": "GET", "path": path, "sourceIp": "192.0.2.1", "protocol": "HTTP/1.1",
        "userAgent": "go-tfe"}, "requestId": "r-1", "stage": "$default", "timeEpoch": 0}}
response = Mangum(create_app(container, lazy=True), lifespan="off")(event, None)
print(json.dumps({"status": response["statusCode"], "modules": sorted(sys.modules)}))
"""


def test_the_first_request_loads_no_pydantic_v1():
    found = fresh(FIRST_REQUEST)
    assert found["status"] == 200
    assert not [m for m in found["modules"] if m.startswith("pydantic.v1")]


GC_PROBE = """
import gc, importlib.util, json, sys
spec = importlib.util.spec_from_file_location("api_handler", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
found = {"at_import": gc.isenabled()}
def failing(event, context):
    found.setdefault("during", gc.isenabled())
    raise RuntimeError("first invocation fails")
module._serve = failing
try:
    module.lambda_handler({}, None)
except RuntimeError:
    pass
found.update(after=gc.isenabled(), frozen=gc.get_freeze_count() > 0)
gc.disable()  # a later invocation leaves the collector alone
try:
    module.lambda_handler({}, None)
except RuntimeError:
    pass
found["later"] = gc.isenabled()
print(json.dumps(found))
"""


def test_on_lambda_the_collector_is_off_until_the_first_invocation_ends_and_the_cold_start_is_frozen():
    handler = str(ROOT / "functions" / "api" / "handler.py")
    on_lambda = fresh(GC_PROBE, handler, env={"AWS_LAMBDA_FUNCTION_NAME": "terrace-api"})
    assert on_lambda == {"at_import": False, "during": False, "after": True, "frozen": True, "later": False}
    elsewhere = fresh(GC_PROBE, handler)  # a test or a tool importing the module keeps its collector
    assert elsewhere == {"at_import": True, "during": True, "after": True, "frozen": False, "later": False}
