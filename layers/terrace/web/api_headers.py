"""The headers of every TFC API response (added by the app's `ExtraHeaders` middleware; `ping` answers with
them alone): the API version go-tfe checks, the TFE version terraform's `cloud` backend reads, the rate limit."""

from __future__ import annotations

from terrace import __version__ as TERRACE_VERSION

API_VERSION = "2.6"
# X-TFE-Version keeps TFE's `vYYYYMM-N` form: terraform's `cloud` backend parses it (`strconv.Atoi` of YYYYMM) to
# decide features; Terrace's own version goes in X-Terrace-Version.
TFE_VERSION = "v202410-1"
# X-TFE-Current-Version is the numeric version TFE sends since 1.0 (`1.0.3`, no `v`), go-tfe's
# `RemoteTFENumericVersion`. The tfe provider (0.74+) prefers it to X-TFE-Version when it checks a minimum: a numeric
# version meets every `vYYYYMM-N` minimum and is compared with numeric ones as a semantic version. 1.x enables what
# Terrace has (run task stages, v202404-1; variable set reads asking for `stacks` too, 1.0.0: an include Terrace
# ignores) and stays below 2.0.1, the organizations' token TTL policies Terrace lacks, so the provider names the
# version it needs instead of meeting a 404. Raise it only with the features its minimums gate
# (`tests/unit/test_api_headers.py` holds the provider's comparison).
TFE_NUMERIC_VERSION = "1.1.0"


def api_headers(rate_limit_per_s: int = 0) -> dict[str, str]:
    headers = {
        "TFP-API-Version": API_VERSION,
        "TFP-AppName": "Terrace",
        "X-TFE-Version": TFE_VERSION,
        "X-TFE-Current-Version": TFE_NUMERIC_VERSION,
        "X-Terrace-Version": TERRACE_VERSION,
    }
    if rate_limit_per_s > 0:
        headers["X-RateLimit-Limit"] = str(rate_limit_per_s)  # go-tfe paces itself at 2/3 of it
    return headers
