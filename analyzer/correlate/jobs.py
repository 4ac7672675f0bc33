"""Several jobs in one run dir: the logs of unrelated jobs merged into one story give a confident
wrong answer, so the report says so.

Three signs, each enough on its own:
- file paths that name different job ids (`slurm-4242.out`, `job_4243/`, `jobid=4244`);
- lines that name different torchelastic run ids (`run_id=...`, `--rdzv-id`, `rdzv_run_id`);
- groups of job log files (training and NCCL logs, not kernel logs, which span the host's uptime)
  whose time spans are hours apart, with no file bridging the gap.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from analyzer.model import Event, SourceInfo, SourceKind

GAP_HOURS = 3.0
_JOB_IN_PATH = re.compile(r"(?:^|[/_.-])(?:slurm|job|jobid|job_id)[-_.=]?(\d{3,})(?=$|[/_.-])", re.I)
_RUN_ID = re.compile(r"\b(?:rdzv_run_id|run_id|rdzv[-_]id)\s*[:=]\s*['\"]?([\w.-]+)")
_JOB_KINDS = (SourceKind.TRAINING_LOG, SourceKind.NCCL_LOG, SourceKind.ELASTIC_ERROR, SourceKind.FAULTHANDLER)


def job_ids(files: Iterable[str]) -> dict[str, list[str]]:
    """Job id -> the files whose path names it."""
    out: dict[str, list[str]] = {}
    for f in files:
        ids = {m.group(1) for m in _JOB_IN_PATH.finditer(f)}
        if len(ids) == 1:
            out.setdefault(ids.pop(), []).append(f)
    return out


def run_ids(events: Iterable[Event]) -> dict[str, str]:
    """Run id -> the first file:line that names it (`none`, the default, is not an id)."""
    out: dict[str, str] = {}
    for e in events:
        m = _RUN_ID.search(e.text)
        if m and m.group(1).lower() not in ("none", "default", ""):
            out.setdefault(m.group(1), f"{e.loc.file}:{e.loc.line}")
    return out


def time_groups(sources: Iterable[SourceInfo], events: Iterable[Event], gap_hours: float = GAP_HOURS) -> list[list[str]]:
    """Job log files grouped by time span; more than one group means spans hours apart."""
    kinds = {s.file: s.kind for s in sources}
    spans: dict[str, tuple[float, float]] = {}
    for e in events:
        if e.time is None or e.time_approx or kinds.get(e.loc.file) not in _JOB_KINDS:
            continue
        lo, hi = spans.get(e.loc.file, (e.time, e.time))
        spans[e.loc.file] = (min(lo, e.time), max(hi, e.time))
    groups: list[list[str]] = []
    end = None
    for file, (lo, hi) in sorted(spans.items(), key=lambda kv: (kv[1][0], kv[0])):
        if end is None or lo - end > gap_hours * 3600:
            groups.append([file])
            end = hi
        else:
            groups[-1].append(file)
            end = max(end, hi)
    return groups


def several_jobs(sources: list[SourceInfo], events: list[Event]) -> str | None:
    """A warning when the run dir holds the logs of more than one job, else None."""
    jobs = job_ids(s.file for s in sources)
    if len(jobs) > 1:
        named = ", ".join(f"{j} ({files[0]})" for j, files in sorted(jobs.items())[:4])
        return f"this directory holds the logs of {len(jobs)} jobs (job ids {named}); {_ADVICE}"
    runs = run_ids(events)
    if len(runs) > 1:
        named = ", ".join(f"{r} ({where})" for r, where in sorted(runs.items())[:4])
        return f"this directory holds the logs of {len(runs)} runs (run ids {named}); {_ADVICE}"
    groups = time_groups(sources, events)
    if len(groups) > 1:
        named = "; ".join(", ".join(g[:2]) + (f" and {len(g) - 2} more" if len(g) > 2 else "") for g in groups[:3])
        return (
            f"the logs fall into {len(groups)} time spans more than {GAP_HOURS:g} hours apart ({named}): "
            f"probably {len(groups)} jobs; {_ADVICE}"
        )
    return None


_ADVICE = "the verdict may mix them: analyze each job's directory on its own, or run `postmortem triage` over them"
