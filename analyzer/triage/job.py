"""One job of a batch: analyze a run dir through the public `analyze()` entry point and keep
what triage needs. Runs in a worker process (local pool or Dask), so it takes and returns plain
data only."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analyzer import __version__

# an error-sounding line; the failing lines of an `unknown` job are mined for templates
FAILING = re.compile(
    r"\b(?:error|errno|fail(?:ed|ure)?|fatal|exception|abort(?:ed)?|killed|terminat\w*|panic|segmentation|"
    r"denied|refused|timed? ?out|cannot|could not|unable|incompatible|corrupt\w*|invalid)\b",
    re.IGNORECASE,
)
MAX_FAILING_LINES = 5
TAIL_BYTES = 256 << 10
MAX_STATE_FILES = 10000


def job_state(path: Path) -> str:
    """A digest of what is in the run dir (relative names, sizes, modification times) and of the
    tool's version: a stored result with the same state needs no new analysis."""
    h = hashlib.sha1(__version__.encode())
    if path.is_file():
        st = path.stat()
        h.update(f"{path.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        return h.hexdigest()
    rows = []
    for root, dirs, files in os.walk(path, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            p = Path(root, name)
            try:
                st = p.lstat()
            except OSError:
                continue
            rows.append(f"{p.relative_to(path)}\0{st.st_size}\0{st.st_mtime_ns}\n")
            if len(rows) >= MAX_STATE_FILES:
                break
    for row in rows:
        h.update(row.encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def failing_lines(run_dir: Path, report: dict[str, Any]) -> list[str]:
    """The first error-sounding lines of the run dir's parsed text sources, in file order."""
    out: list[str] = []
    base = run_dir if run_dir.is_dir() else run_dir.parent
    for src in report.get("sources", []):
        if src.get("status") != "parsed" or src.get("kind") == "core_dump":
            continue
        path = base / src["file"] if run_dir.is_dir() else run_dir
        if path.suffix in (".gz", ".xz", ".bz2", ".zst") or path.is_symlink() or not path.is_file():
            continue
        try:
            with path.open("rb") as fh:
                size = path.stat().st_size
                if size > TAIL_BYTES:
                    fh.seek(size - TAIL_BYTES)
                data = fh.read(TAIL_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        for line in data.splitlines():
            line = line.strip()
            if line and len(line) < 2000 and FAILING.search(line):
                out.append(line[:500])
                if len(out) >= MAX_FAILING_LINES:
                    return out
    return out


def analyze_job(job: str, state: str | None = None) -> dict[str, Any]:
    """Analyze one run dir. Returns {job, state, report} or {job, state, reason} when the
    analysis failed; never raises for a bad run dir."""
    from analyzer.pipeline import analyze
    from analyzer.report.json_report import to_dict

    path = Path(job)
    try:
        if not path.exists():
            raise FileNotFoundError(f"no such file or directory: {job}")
        if state is None:
            state = job_state(path)
        report = to_dict(analyze(path))
    except Exception as exc:  # one bad job never stops the batch
        return {"job": job, "state": state, "reason": f"{type(exc).__name__}: {exc}"}
    out: dict[str, Any] = {"job": job, "state": state, "report": report}
    if report["verdict"]["category"] == "unknown":
        out["failing_lines"] = failing_lines(path, report)
    return out


def analyze_jobs(todo: Sequence[tuple[str, str | None]]) -> list[dict[str, Any]]:
    """A few jobs in one task (fewer round trips to the pool or the cluster)."""
    return [analyze_job(job, state) for job, state in todo]


def warm_up() -> None:
    """Load the signature database and the compiled scanner (through `analyze()` on an empty
    dir), so that worker processes forked after this start with them."""
    import tempfile

    from analyzer.pipeline import analyze

    with tempfile.TemporaryDirectory(prefix="postmortem-warm-") as tmp:
        analyze(Path(tmp))
