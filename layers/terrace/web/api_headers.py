"""The headers of every TFC API response (added by the app's `ExtraHeaders` middleware; `ping` answers with
them alone): the API version go-tfe checks, the TFE version terraform's `cloud` backend reads, the rate limit."""

from __future__ import annotations

from terrace import __version__ as TERRACE_VERSION

API_VERSION = "2.6"
# X-TFE-Version keeps TFE's `vYYYYMM-N` form: terraform's `cloud` backend parses it (`strconv.Atoi` of YYYYMM) to
# decide features; Terrace's own version goes in X-Terrace-Version.
TFE_VERSION = "v202410-1"


def api_headers(rate_limit_per_s: int = 0) -> dict[str, str]:
    headers = {
        "TFP-API-Version": API_VERSION,
        "TFP-AppName": "Terrace",
        "X-TFE-Version": TFE_VERSION,
        "X-TFE-Current-Version": TFE_VERSION,
        "X-Terrace-Version": TERRACE_VERSION,
    }
    if rate_limit_per_s > 0:
        headers["X-RateLimit-Limit"] = str(rate_limit_per_s)  # go-tfe paces itself at 2/3 of it
    return headers
