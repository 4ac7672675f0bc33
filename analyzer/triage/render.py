"""The triage result's formats, in one registry that also feeds `--format`: table, json,
markdown and html render the result object (analyzer/report/fleet.py); csv and parquet are the
jobs DataFrame written by pandas (parquet through pyarrow)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def flat_jobs(result: dict[str, Any]) -> pd.DataFrame:
    """The jobs as a flat table (first_failure spread over columns, hosts joined)."""
    import pandas as pd

    rows = []
    for j in result["jobs"]:
        ff = j.get("first_failure") or {}
        rows.append(
            {
                "job": j["job"],
                "category": j["category"],
                "subcategory": j["subcategory"],
                "confidence": j["confidence"],
                "fingerprint": j["fingerprint"],
                "group": j["group"],
                "first_failure_rank": ff.get("rank"),
                "first_failure_host": ff.get("host"),
                "first_failure_time": ff.get("time"),
                "first_failure_file": ff.get("file"),
                "first_failure_line": ff.get("line"),
                "hosts": " ".join(j["hosts"]),
                "report": j.get("report"),
            }
        )
    df = pd.DataFrame(rows, columns=list(rows[0]) if rows else ["job"])
    for col in ("first_failure_rank", "first_failure_line"):
        if col in df:
            df[col] = df[col].astype("Int64")
    return df


def _json(result: dict[str, Any], color: bool = False) -> str:
    return json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _csv(result: dict[str, Any], color: bool = False) -> str:
    return str(flat_jobs(result).to_csv(index=False, lineterminator="\n"))


def _parquet(result: dict[str, Any], color: bool = False) -> bytes:
    buf = io.BytesIO()
    flat_jobs(result).to_parquet(buf, engine="pyarrow", index=False)
    return buf.getvalue()


def _table(result: dict[str, Any], color: bool = False) -> str:
    from analyzer.report.fleet import render_table

    return render_table(result, color=color)


def _markdown(result: dict[str, Any], color: bool = False) -> str:
    from analyzer.report.fleet import render_markdown

    return render_markdown(result)


def _html(result: dict[str, Any], color: bool = False) -> str:
    from analyzer.report.fleet import render_html

    return render_html(result)


RENDERERS: dict[str, Callable[..., str | bytes]] = {
    "table": _table,
    "json": _json,
    "csv": _csv,
    "parquet": _parquet,
    "markdown": _markdown,
    "html": _html,
}
BINARY = {"parquet"}


def render(result: dict[str, Any], fmt: str, color: bool = False) -> str | bytes:
    return RENDERERS[fmt](result, color=color)
