"""Secrets seen in logs (tokens, keys, passwords in env dumps) never reach a report."""

from __future__ import annotations

import re
from dataclasses import replace

from analyzer.model import Report

_SECRETS = (
    re.compile(
        r"(?i)\b([\w.-]*(?:token|secret|password|passwd|api[_-]?key|access[_-]?key|auth)[\w.-]*)(\s*[=:]\s*)(['\"]?)([^\s'\",]{4,})"
    ),
    re.compile(
        r"\b(hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|xox[baprs]-[A-Za-z0-9-]{10,})\b"
    ),
    re.compile(r"(?i)(bearer\s+)([A-Za-z0-9._~+/-]{16,}=*)"),
)


def redact_text(text: str) -> str:
    text = _SECRETS[0].sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}[REDACTED]", text)
    text = _SECRETS[1].sub("[REDACTED]", text)
    return _SECRETS[2].sub(lambda m: f"{m.group(1)}[REDACTED]", text)


def redact(report: Report) -> Report:
    evidence = tuple(replace(e, text=redact_text(e.text)) for e in report.evidence)
    timeline = tuple(replace(t, summary=redact_text(t.summary)) for t in report.timeline)
    cascade = tuple(replace(c, what=redact_text(c.what)) for c in report.cascade)
    verdict = replace(
        report.verdict, explanation=redact_text(report.verdict.explanation), title=redact_text(report.verdict.title)
    )
    return replace(report, evidence=evidence, timeline=timeline, cascade=cascade, verdict=verdict)
