"""Score a held-out set of labeled cases with ``postmortem analyze``, as excerpts and buried.

    python -m corpora.heldout score CASES_DIR [--buried BACKGROUND_DIR] [--format json|text]
    python -m corpora.heldout render REPORT.json [--format text|markdown]

CASES_DIR holds case directories in the corpus layout (``<id>/case.yaml`` plus the log files).
Every case is analyzed as it is ("excerpt").  With ``--buried``, every case is analyzed a second
time inside a copy of BACKGROUND_DIR, the run directory of a healthy multi-rank job (see
``python -m corpora.heldout_background``): the case's lines are inserted, in order, into one
rank's log at a point 60% of the way through it; a case with several files puts its k-th file
into rank (r + k) mod N, where r is the case's first failing rank (0 when unknown) and N the
number of rank logs.  ``--console tee`` (the default) also writes the inserted lines into the
launcher console with torchrun's ``[default<rank>]:`` prefix at the same relative point, as
``torchrun --tee 3`` does; ``keep`` leaves the console as it is and ``drop`` removes it.
``--ending went-on`` (the default) keeps the background's later lines after the inserted ones, so
the job still goes on and its launcher still says it finished; ``--ending died`` makes the job
die where the case's lines are: every rank log and the console end at that point (the failing
ranks' logs with the case's lines), so no later training line or "successfully finished" follows.

A verdict is right when its category equals the label's; for a case whose ``case.yaml`` says
``decidable: false`` (the logs alone cannot name the cause) ``unknown`` is right too, and for one
whose ``case.yaml`` says ``failure_line: false`` (no kept line says that anything failed) ``none`` is.  The report
gives every case's label and prediction with confidence, the accuracy, and the recall of every
category.  The exit status is 0 when every case could be analyzed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from analyzer.corpus.labels import accepted, has_failure_line, is_decidable

#: where the case's lines go in a rank log (fraction of its lines that come before them)
INSERT_AT = 0.6
#: seconds one ``postmortem analyze`` may take
ANALYZE_TIMEOUT = 300.0
#: per-rank logs written by ``torchrun --log-dir``: .../attempt_<n>/<local_rank>/stdout.log
RANK_LOG = re.compile(r"(?:^|/)attempt_\d+/(\d+)/stdout\.log$")
CONSOLE_NAME = "console.log"


@dataclass
class Case:
    case_id: str
    path: Path
    category: str
    subcategory: str | None
    rank: int | None
    decidable: bool
    files: list[Path]
    failure_line: bool = True


@dataclass
class Prediction:
    category: str | None
    confidence: float | None
    subcategory: str | None = None
    error: str | None = None


@dataclass
class Row:
    case_id: str
    label: str
    decidable: bool
    excerpt: Prediction
    buried: Prediction | None = None
    excerpt_right: bool = False
    buried_right: bool | None = None


@dataclass
class Report:
    cases_dir: str
    background: str | None
    rows: list[Row] = field(default_factory=list)


def load_cases(cases_dir: Path) -> list[Case]:
    cases: list[Case] = []
    for yml in sorted(cases_dir.glob("*/case.yaml")):
        label = yaml.safe_load(yml.read_text(encoding="utf-8")) or {}
        ff = label.get("first_failure") or {}
        files = sorted(p for p in yml.parent.rglob("*") if p.is_file() and p.name != "case.yaml")
        cases.append(
            Case(
                case_id=str(label.get("id") or yml.parent.name),
                path=yml.parent,
                category=str(label["category"]),
                subcategory=label.get("subcategory"),
                rank=ff.get("rank") if isinstance(ff.get("rank"), int) else None,
                decidable=is_decidable(label),
                files=files,
                failure_line=has_failure_line(label),
            )
        )
    return cases


def analyze(run_dir: Path, postmortem: list[str]) -> Prediction:
    try:
        proc = subprocess.run(
            [*postmortem, "analyze", str(run_dir), "--format", "json"],
            capture_output=True,
            text=True,
            timeout=ANALYZE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Prediction(None, None, error=f"timed out after {ANALYZE_TIMEOUT:.0f}s")
    try:
        verdict = json.loads(proc.stdout)["verdict"]
    except (json.JSONDecodeError, KeyError, TypeError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        return Prediction(None, None, error=tail[0][:300])
    return Prediction(verdict.get("category"), verdict.get("confidence"), verdict.get("subcategory"))


def is_right(case: Case, pred: Prediction) -> bool:
    return accepted(case.category, pred.category, case.decidable, case.failure_line)


def rank_logs(background: Path) -> dict[int, Path]:
    """Local rank -> its stdout log (relative to the background dir)."""
    found: dict[int, Path] = {}
    for p in sorted(background.rglob("stdout.log")):
        rel = p.relative_to(background)
        m = RANK_LOG.search(rel.as_posix())
        if m:
            found.setdefault(int(m.group(1)), rel)
    return found


def _read_lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return text.splitlines(keepends=True)


def _insert(lines: list[str], new: list[str], at: float, died: bool = False) -> list[str]:
    if lines and not lines[-1].endswith("\n"):
        lines = [*lines[:-1], lines[-1] + "\n"]
    cut = int(len(lines) * at)
    block = [ln if ln.endswith("\n") else ln + "\n" for ln in new]
    return lines[:cut] + block + ([] if died else lines[cut:])


def bury(case: Case, background: Path, dest: Path, console: str = "tee", ending: str = "went-on") -> dict[str, str]:
    """Copy BACKGROUND to DEST and insert the case's lines; returns case file -> rank log used."""
    shutil.copytree(background, dest, symlinks=False)
    ranks = rank_logs(dest)
    if not ranks:
        raise ValueError(f"{background}: no per-rank logs (attempt_<n>/<rank>/stdout.log) found")
    order = sorted(ranks)
    base = case.rank if case.rank is not None and case.rank in ranks else order[0]
    start = order.index(base)
    console_path = dest / CONSOLE_NAME
    console_lines = _read_lines(console_path) if console_path.is_file() else None
    placed: dict[str, str] = {}
    tee_block: list[str] = []
    died = ending == "died"
    for k, src in enumerate(case.files):
        rank = order[(start + k) % len(order)]
        target = dest / ranks[rank]
        new = _read_lines(src)
        target.write_text("".join(_insert(_read_lines(target), new, INSERT_AT, died)), encoding="utf-8")
        placed[src.relative_to(case.path).as_posix()] = ranks[rank].as_posix()
        tee_block += [f"[default{rank}]:{ln}" for ln in new]
    if console_lines is not None:
        if console == "drop":
            console_path.unlink()
        elif console == "tee":
            console_path.write_text("".join(_insert(console_lines, tee_block, INSERT_AT, died)), encoding="utf-8")
    if died:  # the ranks that printed none of the case's lines stop there too
        for rank in order:
            if ranks[rank].as_posix() not in placed.values():
                target = dest / ranks[rank]
                target.write_text("".join(_insert(_read_lines(target), [], INSERT_AT, True)), encoding="utf-8")
    return placed


def score(
    cases: list[Case], background: Path | None, postmortem: list[str], console: str, cases_dir: Path, ending: str = "went-on"
) -> Report:
    report = Report(cases_dir=str(cases_dir), background=str(background) if background else None)
    for case in cases:
        pred = analyze(case.path, postmortem)
        row = Row(case.case_id, case.category, case.decidable, pred, excerpt_right=is_right(case, pred))
        if background is not None:
            with tempfile.TemporaryDirectory(prefix="heldout-") as tmp:
                run_dir = Path(tmp) / case.case_id
                bury(case, background, run_dir, console, ending)
                row.buried = analyze(run_dir, postmortem)
                row.buried_right = is_right(case, row.buried)
        report.rows.append(row)
    return report


def summary(report: Report) -> dict[str, object]:
    rows = report.rows
    cats = sorted({r.label for r in rows})

    def acc(key: str) -> dict[str, object]:
        vals = [getattr(r, key) for r in rows if getattr(r, key) is not None]
        right = sum(1 for v in vals if v)
        return {"right": right, "total": len(vals), "accuracy": round(right / len(vals), 4) if vals else None}

    def recall(key: str) -> dict[str, object]:
        out: dict[str, object] = {}
        for c in cats:
            vals = [getattr(r, key) for r in rows if r.label == c and getattr(r, key) is not None]
            if vals:
                out[c] = {
                    "right": sum(1 for v in vals if v),
                    "total": len(vals),
                    "recall": round(sum(1 for v in vals if v) / len(vals), 4),
                }
        return out

    out: dict[str, object] = {"cases": len(rows), "excerpt": acc("excerpt_right"), "excerpt_recall": recall("excerpt_right")}
    if report.background is not None:
        out["buried"] = acc("buried_right")
        out["buried_recall"] = recall("buried_right")
    return out


def _fmt(pred: Prediction | None) -> str:
    if pred is None:
        return "-"
    if pred.error:
        return f"ERROR ({pred.error})"
    conf = f"{pred.confidence:.2f}" if isinstance(pred.confidence, (int, float)) else "?"
    return f"{pred.category} {conf}"


def render_text(report: Report, summ: dict[str, object]) -> str:
    buried = report.background is not None
    head = ["case", "label", "excerpt", "ok"] + (["buried", "ok"] if buried else [])
    table = [head]
    for r in report.rows:
        label = r.label + ("" if r.decidable else " (undecidable)")
        line = [r.case_id, label, _fmt(r.excerpt), "yes" if r.excerpt_right else "NO"]
        if buried:
            line += [_fmt(r.buried), "yes" if r.buried_right else "NO"]
        table.append(line)
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table]
    out.append("")
    for key in ("excerpt", "buried"):
        if key not in summ:
            continue
        s = summ[key]
        assert isinstance(s, dict)
        out.append(f"{key}: {s['right']}/{s['total']} right, accuracy {s['accuracy']}")
        rec = summ[f"{key}_recall"]
        assert isinstance(rec, dict)
        for cat, v in rec.items():
            out.append(f"  {cat:<18} recall {v['recall']:.2f} ({v['right']}/{v['total']})")
    return "\n".join(out) + "\n"


def render_markdown(data: dict[str, Any]) -> str:
    """A Markdown table (id, label, excerpt verdict, buried verdict) and the totals, from a JSON report."""
    rows = data["rows"]
    summ = data["summary"]
    assert isinstance(rows, list) and isinstance(summ, dict)
    buried = "buried" in summ

    def cell(pred: dict[str, Any] | None, right: bool | None) -> str:
        if pred is None:
            return "-"
        if pred.get("error"):
            return f"ERROR: {pred['error']}"
        conf = pred.get("confidence")
        conf_s = f"{conf:.2f}" if isinstance(conf, (int, float)) else "?"
        return f"{pred.get('category')} {conf_s} {'✓' if right else '✗'}"

    out = ["| id | label | excerpt verdict | buried verdict |" if buried else "| id | label | excerpt verdict |"]
    out.append("|---|---|---|---|" if buried else "|---|---|---|")
    for r in rows:
        label = r["label"] + ("" if r["decidable"] else " (undecidable: unknown counts)")
        line = f"| {r['case_id']} | {label} | {cell(r['excerpt'], r['excerpt_right'])} |"
        if buried:
            line += f" {cell(r.get('buried'), r.get('buried_right'))} |"
        out.append(line)
    out.append("")
    for key in ("excerpt", "buried"):
        if key not in summ:
            continue
        s = summ[key]
        out.append(f"**{key}**: {s['right']}/{s['total']} right, accuracy {s['accuracy']}")
        out.append("")
    cats = sorted(summ["excerpt_recall"])
    out.append("| category | excerpt recall | buried recall |" if buried else "| category | excerpt recall |")
    out.append("|---|---|---|" if buried else "|---|---|")
    for c in cats:
        e = summ["excerpt_recall"][c]
        line = f"| {c} | {e['recall']:.2f} ({e['right']}/{e['total']}) |"
        if buried:
            b = summ["buried_recall"].get(c)
            line += f" {b['recall']:.2f} ({b['right']}/{b['total']}) |" if b else " - |"
        out.append(line)
    return "\n".join(out) + "\n"


def _postmortem_cmd() -> list[str]:
    exe = shutil.which("postmortem")
    if exe:
        return [exe]
    return [sys.executable, "-c", "import sys; from analyzer.cli import main; sys.exit(main())"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m corpora.heldout", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sc = sub.add_parser("score", help="analyze every case and report accuracy and per-category recall")
    sc.add_argument("cases_dir", type=Path)
    sc.add_argument("--buried", type=Path, default=None, metavar="BACKGROUND_DIR", help="healthy run dir to bury each case in")
    sc.add_argument(
        "--console", choices=["tee", "keep", "drop"], default="tee", help="what to do with the background's console.log"
    )
    sc.add_argument(
        "--ending",
        choices=["went-on", "died"],
        default="went-on",
        help="went-on: the background's later lines stay after the case's; died: every log ends where the case's lines are",
    )
    sc.add_argument("--format", choices=["text", "json"], default="text")
    sc.add_argument("-o", "--output", type=Path, default=None, help="write the report here instead of stdout")
    rd = sub.add_parser("render", help="print a JSON report written by 'score --format json' as text or Markdown")
    rd.add_argument("report", type=Path)
    rd.add_argument("--format", choices=["text", "markdown"], default="text")
    a = ap.parse_args(argv)
    if a.cmd == "render":
        data = json.loads(a.report.read_text(encoding="utf-8"))
        if a.format == "markdown":
            sys.stdout.write(render_markdown(data))
        else:
            rep = Report(cases_dir="", background="" if "buried" in data["summary"] else None)
            for r in data["rows"]:
                b = r.get("buried")
                rep.rows.append(
                    Row(
                        r["case_id"],
                        r["label"],
                        r["decidable"],
                        Prediction(**r["excerpt"]),
                        Prediction(**b) if b else None,
                        r["excerpt_right"],
                        r.get("buried_right"),
                    )
                )
            sys.stdout.write(render_text(rep, data["summary"]))
        return 0
    if not a.cases_dir.is_dir():
        print(f"error: {a.cases_dir} is not a directory", file=sys.stderr)
        return 2
    if a.buried is not None and not rank_logs(a.buried):
        print(f"error: {a.buried} has no per-rank logs (attempt_<n>/<rank>/stdout.log)", file=sys.stderr)
        return 2
    cases = load_cases(a.cases_dir)
    if not cases:
        print(f"error: no */case.yaml under {a.cases_dir}", file=sys.stderr)
        return 2
    report = score(cases, a.buried, _postmortem_cmd(), a.console, a.cases_dir, a.ending)
    summ = summary(report)
    if a.format == "json":
        text = json.dumps({"summary": summ, "rows": [asdict(r) for r in report.rows]}, indent=2) + "\n"
    else:
        text = render_text(report, summ)
    if a.output is not None:
        a.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    failed = [r for r in report.rows if r.excerpt.error or (r.buried is not None and r.buried.error)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["bury", "load_cases", "main", "score", "summary"]
