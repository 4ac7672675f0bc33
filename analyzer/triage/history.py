"""`postmortem history`: what the database remembers, per fingerprint and per node."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from analyzer.triage.store import Store


def history(store: Store, since: datetime | None = None, host: str | None = None) -> dict[str, Any]:
    fps: dict[str, dict[str, Any]] = {}
    nodes: dict[str, dict[str, Any]] = {}
    for row in store.rows(since=since, host=host):
        r = row.record
        f = fps.setdefault(
            r["fingerprint"],
            {
                "fingerprint": r["fingerprint"],
                "category": r["category"],
                "title": r["title"],
                "count": 0,
                "first_seen": row.first_seen,
                "last_seen": row.last_seen,
                "jobs": [],
            },
        )
        f["count"] += 1
        f["first_seen"], f["last_seen"] = min(f["first_seen"], row.first_seen), max(f["last_seen"], row.last_seen)
        f["jobs"].append(row.job)
        for h in r["hosts"]:
            if host is not None and h != host:
                continue
            n = nodes.setdefault(
                h, {"host": h, "count": 0, "first_seen": row.first_seen, "last_seen": row.last_seen, "jobs": [], "categories": {}}
            )
            n["count"] += 1
            n["first_seen"], n["last_seen"] = min(n["first_seen"], row.first_seen), max(n["last_seen"], row.last_seen)
            n["jobs"].append(row.job)
            n["categories"][r["category"]] = n["categories"].get(r["category"], 0) + 1
    for item in [*fps.values(), *nodes.values()]:
        item["first_seen"] = item["first_seen"].isoformat(timespec="seconds")
        item["last_seen"] = item["last_seen"].isoformat(timespec="seconds")
        item["jobs"].sort()
    for n in nodes.values():
        n["categories"] = dict(sorted(n["categories"].items()))
    return {
        "schema_version": 1,
        "fingerprints": sorted(fps.values(), key=lambda f: (-f["count"], f["fingerprint"])),
        "nodes": sorted(nodes.values(), key=lambda n: (-n["count"], n["host"])),
    }


def render_history(data: dict[str, Any], fmt: str) -> str:
    import json

    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=True) + "\n"
    if fmt == "csv":
        import pandas as pd

        df = pd.DataFrame([{**f, "jobs": " ".join(f["jobs"])} for f in data["fingerprints"]])
        return str(df.to_csv(index=False, lineterminator="\n"))
    from analyzer.report.fleet import render_history_markdown, render_history_table

    return render_history_markdown(data) if fmt == "markdown" else render_history_table(data)
