"""The CLI's log streaming in bench/cost.py's model, per run.

While a phase runs, terraform's remote backend (go-tfe's LogReader) reads the phase's log-read URL with a growing
offset: at once after an answer with bytes, else after a back-off of 0.5 s growing to 2 s (go-tfe logreader.go:
`backoff(500, 2000, reads)`), so about one read a `log_poll_s`. Each read is one api request: it reads the run and
the log chunks written since the previous read (one DynamoDB query; `services/runs/log_cursors.py`).

When the api holds a read with nothing new (`TERRACE_LOG_READ_WAIT_S` > 0, the embedded default; 0 on AWS), the
function is held through the whole stream and re-reads every `READ_POLL_S`; before incremental reads each read
read the whole log so far (`RunProfile.whole_log_reads`). Both are modelled, so the bench shows what the hold cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terrace.config import Settings
from terrace.services.runs.logs import READ_POLL_S

from bench.cost_catalog import RunProfile

DEFAULT_HOLD_S = float(Settings.model_fields["log_read_wait_s"].default)
ITEM_KB = 4  # a strongly consistent read unit reads up to 4 KB; a query reads at least one unit
RUN_ITEM_UNITS = 1  # the run item (a few KB)


@dataclass(frozen=True)
class LogReads:
    requests: float  # api requests per run
    held_gb_s: float  # api GB-s per run spent holding reads (beyond each request's own time)
    read_units: float  # DynamoDB read units per run


def hold_s(api_variables: dict[str, Any]) -> float:
    return float(api_variables.get("TERRACE_LOG_READ_WAIT_S", DEFAULT_HOLD_S))


def log_reads(api_variables: dict[str, Any], memory_gb: float, run: RunProfile) -> LogReads:
    hold, stream = hold_s(api_variables), run.log_stream_s
    # chunk units of one read: the whole log so far (half of it on average), or the chunks written since the last
    chunk_units = 1 + run.log_kb_per_phase / 2 / ITEM_KB if run.whole_log_reads else 1.0
    if hold > 0:
        requests = stream / hold  # each answers when bytes come, at the latest after `hold`
        reads = stream / READ_POLL_S  # held: the run and the log again every READ_POLL_S
        held_gb_s = stream * memory_gb
    else:
        requests, reads, held_gb_s = stream / run.log_poll_s, stream / run.log_poll_s, 0.0
    units = reads * (RUN_ITEM_UNITS + chunk_units)
    return LogReads(run.phases * requests, run.phases * held_gb_s, run.phases * units)
