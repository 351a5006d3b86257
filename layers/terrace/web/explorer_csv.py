"""The explorer's rows as CSV (the API's `explorer/export/csv` and the UI's link): a header of the query's fields,
then one line per row, every row (no paging). A cell a spreadsheet would run as a formula (starting with `=`,
`+`, `-`, `@`, a tab or a carriage return) is written with a leading `'`."""

from __future__ import annotations

import csv
import io
from typing import Any

from terrace.domain.explorer_query import Query

_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return "'" + text if text.startswith(_FORMULA) else text


def to_csv(query: Query, rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(query.columns)
    for row in rows:
        writer.writerow([cell(row.get(name)) for name in query.columns])
    return out.getvalue()
