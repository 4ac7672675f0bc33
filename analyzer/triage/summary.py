"""The triage result (design.md's "triage result"): jobs, groups, nodes, failed, built on a
pandas DataFrame of the jobs. Every output format renders this one object."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from analyzer.triage.run import Batch

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1
JOB_COLUMNS = ["job", "category", "subcategory", "confidence", "fingerprint", "group", "first_failure", "hosts", "report"]


def _iso(t: datetime | None) -> str | None:
    return t.isoformat(timespec="seconds") if t is not None else None


def group_id(category: str, fingerprint: str) -> str:
    return f"{category}/{fingerprint[:8]}"


def jobs_frame(batch: Batch) -> pd.DataFrame:
    """One row per job; the table every summary is computed from."""
    import pandas as pd

    rows = []
    for r in batch.records:
        rows.append(
            {
                **{k: r.get(k) for k in JOB_COLUMNS if k != "group"},
                "group": group_id(r["category"], r["fingerprint"]),
                "title": r["title"],
                "gpus": r.get("gpus") or {},
                "first_seen": batch.first_seen.get(r["job"]),
                "last_seen": batch.last_seen.get(r["job"]),
            }
        )
    columns = [*JOB_COLUMNS, "title", "gpus", "first_seen", "last_seen"]
    return pd.DataFrame(rows, columns=columns)


def build(batch: Batch, cutoff: datetime | None = None) -> dict[str, Any]:
    """The result object. `cutoff`: a group is new when its fingerprint was first seen after it."""
    df = jobs_frame(batch)
    records = {r["job"]: r for r in batch.records}
    jobs = [
        {
            **{k: _plain(row[k]) for k in JOB_COLUMNS},
            "gpus": sorted({b for per in row["gpus"].values() for b in per}),
            "first_seen": _iso(_ts(row["first_seen"])),
            "last_seen": _iso(_ts(row["last_seen"])),
        }
        for row in df.to_dict("records")
    ]

    groups: list[dict[str, Any]] = []
    for fp, g in df.groupby("fingerprint", sort=False):
        categories = sorted(set(g["category"]))
        assert len(categories) == 1, f"fingerprint {fp} spans categories {categories}"  # the fingerprint hashes the category
        first = _first(batch, str(fp), g)
        last = max(g["last_seen"].dropna(), default=None)
        lead = records[sorted(g["job"])[0]]
        groups.append(
            {
                "group": group_id(categories[0], str(fp)),
                "fingerprint": str(fp),
                "category": categories[0],
                "subcategory": lead["subcategory"],
                "title": lead["title"],
                "count": int(len(g)),
                "jobs": sorted(g["job"]),
                "hosts": sorted({h for hs in g["hosts"] for h in hs}),
                "first_seen": _iso(first),
                "last_seen": _iso(last),
                "new": bool(cutoff is None or first is None or first >= cutoff),
                "evidence": lead["evidence"],
                "remediation": lead["remediation"],
                "templates": lead.get("templates", []),
            }
        )
    groups.sort(key=lambda g: (-g["count"], g["category"], g["fingerprint"]))

    nodes: list[dict[str, Any]] = []
    exploded = df[["job", "category", "hosts", "gpus"]].explode("hosts").dropna(subset=["hosts"])
    for host, g in exploded.groupby("hosts", sort=True):
        gpus = sorted({b for per in g["gpus"] for b in per.get(str(host), [])})
        nodes.append(
            {
                "host": str(host),
                "jobs": sorted(g["job"]),
                "count": int(len(g)),
                "categories": {str(k): int(v) for k, v in sorted(g["category"].value_counts().items())},
                "gpus": gpus,
            }
        )
    nodes.sort(key=lambda n: (-n["count"], n["host"]))

    counts: list[dict[str, Any]] = []
    if len(df):
        for (cat, sub), n in df.fillna({"subcategory": ""}).groupby(["category", "subcategory"]).size().items():
            counts.append({"category": str(cat), "subcategory": str(sub) or None, "jobs": int(n)})
    counts.sort(key=lambda c: (-c["jobs"], c["category"], c["subcategory"] or ""))
    return {
        "schema_version": SCHEMA_VERSION,
        "jobs": jobs,
        "groups": groups,
        "nodes": nodes,
        "failed": list(batch.failed),
        "counts": counts,
        "since": _iso(cutoff),
        "daily": batch.daily or _daily(jobs),
    }


def _daily(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Jobs per day and category of this batch alone (no history)."""
    counts: dict[tuple[str, str], int] = {}
    for j in jobs:
        key = ((j["first_seen"] or "unknown")[:10], j["category"])
        counts[key] = counts.get(key, 0) + 1
    return [{"day": d, "category": c, "jobs": n} for (d, c), n in sorted(counts.items())]


def _first(batch: Batch, fp: str, g: Any) -> datetime | None:
    seen = [t for t in [batch.fingerprint_first_seen.get(fp), *g["first_seen"].dropna()] if t is not None]
    return min(seen) if seen else None


def _ts(value: Any) -> datetime | None:
    if value is None or value != value:  # NaT / NaN
        return None
    return value.to_pydatetime() if hasattr(value, "to_pydatetime") else value


def _plain(value: Any) -> Any:
    """numpy / pandas scalars -> Python values for JSON."""
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        return value.item()
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value
