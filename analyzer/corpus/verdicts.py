"""`postmortem signatures verdicts`: what a user sees for each catalog line alone.

`signatures coverage` asks whether the signatures find a message; this asks what the whole
analysis answers when a run dir holds nothing but that line: its verdict. A failure line the
text cannot explain (`unknown` in the catalog) must not read as "No failure found"; a line healthy
jobs print must not read as a failure; a cause must be named as itself.

Per line, by the catalog's category and role:
- `none` (benign): `benign` when the verdict is `none`, else `invented`;
- `unknown` (undecidable): `recognised` when the verdict is `unknown`, `claimed` when it names a
  category, `missed` when it is `none`;
- a category, root cause: `named` when the verdict is that category, `other` when it is another
  category, `abstained` when it is `unknown`, `missed` when it is `none`;
- a category, symptom or context (which alone need not decide): `named`, or `alone` otherwise,
  unless the verdict is `none` for a symptom (`missed`: a failure's line read as no failure).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyzer.classify.model import shipped_model
from analyzer.paths import signatures_dir
from analyzer.pipeline import Options, analyze
from analyzer.signatures.coverage import Message, load_messages, message_fields
from analyzer.signatures.loader import Problem

GOOD = frozenset({"benign", "recognised", "named", "alone"})
STATUSES = ("named", "alone", "benign", "recognised", "claimed", "abstained", "other", "missed", "invented")


@dataclass(frozen=True, slots=True)
class LineVerdict:
    message: Message
    line: str
    verdict: str
    status: str


def status(message: Message, verdict: str) -> str:
    if message.category == "none":
        return "benign" if verdict == "none" else "invented"
    if message.category == "unknown":
        return {"unknown": "recognised", "none": "missed"}.get(verdict, "claimed")
    if verdict == message.category:
        return "named"
    if message.role != "root_cause":
        return "missed" if verdict == "none" and message.role == "symptom" else "alone"
    return {"unknown": "abstained", "none": "missed"}.get(verdict, "other")


def measure(root: Path | None = None) -> tuple[list[LineVerdict], list[Problem]]:
    """Every line of every catalog under `root` (the shipped database by default), analysed alone
    with that database and the shipped model."""
    sigs, messages, problems = load_messages(root or signatures_dir())
    model = shipped_model()
    opts = Options(workers=1)
    out: list[LineVerdict] = []
    with tempfile.TemporaryDirectory(prefix="pm-verdicts-") as tmp:
        run = Path(tmp) / "run"
        run.mkdir()
        log = run / "train.log"
        for msg in messages:
            for line in msg.lines:
                log.write_text(line + "\n", encoding="utf-8")
                verdict = analyze(run, opts, sigs, model).verdict.category.value
                out.append(LineVerdict(msg, line, verdict, status(msg, verdict)))
    return out, problems


def as_json(results: list[LineVerdict], problems: list[Problem]) -> dict[str, Any]:
    counts = Counter(r.status for r in results)
    return {
        "lines": len(results),
        "counts": {s: counts[s] for s in STATUSES},
        "problems": [str(p) for p in problems],
        "results": [{**message_fields(r.message), "line": r.line, "verdict": r.verdict, "status": r.status} for r in results],
    }


def as_text(results: list[LineVerdict], problems: list[Problem], verbose: bool = True) -> str:
    counts = Counter(r.status for r in results)
    out = []
    if verbose:
        for r in results:
            if r.status not in GOOD:
                out.append(
                    f"{r.status:<10} {r.message.category} -> {r.verdict}  {r.message.emitter}/{r.message.id}: {r.line[:100]}"
                )
    out.append(f"{len(results)} lines: " + ", ".join(f"{counts[s]} {s}" for s in STATUSES))
    out.extend(str(p) for p in problems)
    return "\n".join(out)
