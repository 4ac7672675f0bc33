"""The JSON contract (schema_version 1); every other format renders the same object."""

from __future__ import annotations

import json
from typing import Any

from analyzer.events.clock import format_time
from analyzer.model import Report
from analyzer.report.safe import shown_name

SCHEMA_VERSION = 1


def to_dict(report: Report) -> dict[str, Any]:
    v = report.verdict
    ff = v.first_failure
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "postmortem", "version": report.tool_version},
        "run_dir": report.run_dir,
        "verdict": {
            "category": v.category.value,
            "subcategory": v.subcategory,
            "confidence": v.confidence,
            "title": v.title,
            "explanation": v.explanation,
            "first_failure": {
                "rank": ff.rank,
                "host": ff.host,
                "time": format_time(ff.time),
                "time_approx": ff.time_approx,
                "file": ff.file,
                "line": ff.line,
                "pci_bus_id": ff.pci_bus_id,
                "gpu_index": ff.gpu_index,
                "rank_note": ff.rank_note,
                "time_note": ff.time_note,
            },
            "remediation": list(v.remediation),
            "signatures": list(v.signatures),
            "fingerprint": v.fingerprint,
        },
        "alternatives": [
            {"category": a.category.value, "subcategory": a.subcategory, "confidence": a.confidence} for a in report.alternatives
        ],
        "cascade": [
            {
                "rank": c.ranks[0] if c.ranks else None,
                "ranks": list(c.ranks),
                "host": c.host,
                "time": format_time(c.time),
                "what": c.what,
                "caused_by": c.caused_by,
                "count": c.count,
            }
            for c in report.cascade
        ],
        "evidence": [
            {
                "file": e.file,
                "line": e.line,
                "text": e.text,
                "signature": e.signature,
                "role": e.role.value,
                "rank": e.rank,
                "host": e.host,
                "time": format_time(e.time),
                "time_approx": e.time_approx,
            }
            for e in report.evidence
        ],
        "timeline": [
            {
                "time": format_time(t.time),
                "host": t.host,
                "rank": t.rank,
                "kind": t.kind,
                "summary": t.summary,
                "file": t.file,
                "line": t.line,
            }
            for t in report.timeline
        ],
        "sources": [
            {"file": s.file, "kind": s.kind.value, "bytes": s.bytes, "lines": s.lines, "status": s.status, "note": s.note}
            for s in report.sources
        ],
        "missing_evidence": list(report.missing_evidence),
        "warnings": list(report.warnings),
    }


def _valid_utf8(value: Any) -> Any:
    """Every string as valid UTF-8: bytes of a file name that were not UTF-8 shown as `\\xNN`."""
    if isinstance(value, str):
        return shown_name(value)
    if isinstance(value, dict):
        return {_valid_utf8(k): _valid_utf8(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_valid_utf8(v) for v in value]
    return value


def render_json(report: Report) -> str:
    return json.dumps(_valid_utf8(to_dict(report)), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
