"""A job's triage record: the few things triage keeps from its report (plain JSON)."""

from __future__ import annotations

import re
from typing import Any

# GPUs by PCI bus id, as NVRM (Xid), NCCL (busId) and the PCIe AER driver write them
_BUS = (
    re.compile(r"PCI:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})"),
    re.compile(r"\bbusId\s+([0-9a-fA-F]+)\b"),
    re.compile(r"\b([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\.[0-7]\b"),
)


NOT_HOSTS = {"localhost", "127.0.0.1", "::1"}


def bus_ids(text: str) -> list[str]:
    out = []
    for rx in _BUS:
        for m in rx.finditer(text):
            bus = m.group(1).lower()
            if rx is _BUS[1]:  # NCCL's compact form 3b000 / 0000:3b:00.0
                bus = bus.rjust(5, "0")
                bus = f"0000:{bus[-5:-3]}:{bus[-3:-1]}"
            if bus not in out:
                out.append(bus)
    return out


def record(job: str, report: dict[str, Any], failing_lines: list[str] | None = None) -> dict[str, Any]:
    v = report["verdict"]
    hosts: set[str] = set()
    ff = v["first_failure"]
    for row in [ff, *report.get("evidence", []), *report.get("timeline", []), *report.get("cascade", [])]:
        for host in (row.get("host") or "").split(","):  # a cascade row may name several
            if host.strip() and host.strip() not in NOT_HOSTS:
                hosts.add(host.strip())
    gpus: dict[str, list[str]] = {}
    for e in report.get("evidence", []):
        if e.get("role") == "root_cause":
            for bus in bus_ids(e.get("text") or ""):
                host = e.get("host") or ff.get("host") or ""
                if bus not in gpus.setdefault(host, []):
                    gpus[host].append(bus)
    roots = [e for e in report.get("evidence", []) if e.get("role") == "root_cause"]
    return {
        "job": job,
        "category": v["category"],
        "subcategory": v["subcategory"],
        "confidence": v["confidence"],
        "fingerprint": v["fingerprint"],
        "report_fingerprint": v["fingerprint"],
        "title": v["title"],
        "first_failure": ff,
        "hosts": sorted(hosts),
        "gpus": {h: sorted(b) for h, b in sorted(gpus.items())},
        "evidence": [{"file": e["file"], "line": e["line"], "text": e["text"]} for e in roots[:3]],
        "remediation": list(v.get("remediation", [])),
        "signatures": list(v.get("signatures", [])),
        "failing_lines": list(failing_lines or []),
        "templates": [],
        "report": None,
    }
