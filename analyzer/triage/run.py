"""The batch: every run dir analyzed once (a local process pool, in-process for one job at a
time, or a Dask cluster), results stored as they arrive, unchanged jobs taken from the history
instead of being analyzed again."""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from analyzer.triage.job import analyze_job, analyze_jobs, job_state, warm_up
from analyzer.triage.records import record
from analyzer.triage.store import Store
from analyzer.triage.templates import mine, template_fingerprint

Progress = Callable[[int, int, str], None]
MAX_CHUNK = 8
HISTORY_DAYS = 90  # how far back the fleet page's counts per day reach


@dataclass
class Batch:
    records: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    analyzed: int = 0
    reused: int = 0
    first_seen: dict[str, datetime] = field(default_factory=dict)
    last_seen: dict[str, datetime] = field(default_factory=dict)
    fingerprint_first_seen: dict[str, datetime] = field(default_factory=dict)  # from the history
    daily: list[dict[str, Any]] = field(default_factory=list)  # jobs per day and category, from the history


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def job_name(path: str | Path) -> str:
    """A job's identity: its absolute path (symlinks kept as given)."""
    return os.path.abspath(os.fspath(path))


def _quiet_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle


def _chunks(todo: Sequence[tuple[str, str]], workers: int) -> list[list[tuple[str, str]]]:
    """Tasks of a few jobs each: fewer round trips, still several tasks per worker."""
    size = max(1, min(MAX_CHUNK, len(todo) // (workers * 4)))
    return [list(todo[i : i + size]) for i in range(0, len(todo), size)]


def _pool_map(todo: Sequence[tuple[str, str]], jobs: int) -> Iterator[dict[str, Any]]:
    """Chunks of jobs on a process pool. A worker that dies (a crash in a native library) breaks
    the pool: its unfinished chunks are retried one job at a time on a new pool, and a job that
    kills its worker again is reported as failed."""
    if jobs <= 1 or len(todo) <= 1:
        for job, state in todo:
            yield analyze_job(job, state)
        return
    warm_up()  # forked workers inherit the loaded signatures
    context = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    queue = _chunks(todo, jobs)
    in_flight = 2 * jobs  # a short queue: Ctrl-C stops soon
    while queue:
        pool = ProcessPoolExecutor(max_workers=min(jobs, len(todo)), initializer=_quiet_worker, mp_context=context)
        pending: dict[Future[list[dict[str, Any]]], list[tuple[str, str]]] = {}
        broken: list[list[tuple[str, str]]] = []
        try:
            while queue or pending:
                while queue and len(pending) < in_flight:
                    chunk = queue.pop(0)
                    pending[pool.submit(analyze_jobs, chunk)] = chunk
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    chunk = pending.pop(fut)
                    try:
                        results = fut.result()
                    except BrokenProcessPool:
                        broken.append(chunk)
                        continue
                    yield from results
                if broken:
                    break
        finally:
            for fut in pending:
                fut.cancel()
            pool.shutdown(wait=True, cancel_futures=True)
        if broken:
            isolated = in_flight == 1
            in_flight = 1  # from now on one job at a time, so that a death names its job
            for chunk in broken:
                if len(chunk) == 1 and isolated:
                    job, state = chunk[0]
                    yield {
                        "job": job,
                        "state": state,
                        "reason": "the analysis killed its worker process (a crash in a native library?)",
                    }
                else:
                    queue.extend([item] for item in chunk)
            queue.extend(pending.values())


def _dask_map(todo: Sequence[tuple[str, str]], address: str) -> Iterator[dict[str, Any]]:
    """The same chunks on a Dask cluster; a chunk that the cluster gives up on (its workers
    died, see distributed's allowed-failures) puts its jobs under failed."""
    from distributed import Client, as_completed

    with Client(address, timeout="30s") as client:
        workers = max(1, sum(int(w.get("nthreads", 1)) for w in client.scheduler_info()["workers"].values()))
        chunks = {client.submit(analyze_jobs, chunk, pure=False): chunk for chunk in _chunks(todo, workers)}
        try:
            for fut in as_completed(list(chunks)):
                try:
                    results = fut.result()
                except Exception as exc:
                    results = [
                        {"job": j, "state": s, "reason": f"on the cluster: {type(exc).__name__}: {exc}"} for j, s in chunks[fut]
                    ]
                yield from results
        finally:
            client.cancel([f for f in chunks if not f.done()])


def triage(
    paths: Sequence[str | Path],
    *,
    jobs: int | None = None,
    scheduler: str | None = None,
    store: Store | None = None,
    progress: Progress | None = None,
    now: datetime | None = None,
) -> Batch:
    """Analyze every run dir (once each); a KeyboardInterrupt leaves every finished job stored."""
    now = now or datetime.now(UTC)
    batch = Batch()
    names = list(dict.fromkeys(job_name(p) for p in paths))
    stored = store.states(names) if store is not None else {}
    todo: list[tuple[str, str]] = []
    for name in names:
        if not os.path.lexists(name):
            batch.failed.append({"job": name, "reason": "no such file or directory"})
            continue
        state = job_state(Path(name))
        old = stored.get(name)
        if old is not None and old.state == state:
            batch.records.append(old.record)
            batch.reused += 1
            batch.first_seen[name] = old.first_seen
            if store is not None:
                store.touch(name, now)
            batch.last_seen[name] = now
        else:
            todo.append((name, state))
            if old is not None:
                batch.first_seen[name] = old.first_seen
    total = len(todo)
    results = _dask_map(todo, scheduler) if scheduler else _pool_map(todo, jobs or default_jobs())
    for done, out in enumerate(results, start=1):
        if "reason" in out:
            batch.failed.append({"job": out["job"], "reason": out["reason"]})
        else:
            rec = record(out["job"], out["report"], out.get("failing_lines"))
            batch.records.append(rec)
            batch.analyzed += 1
            batch.first_seen.setdefault(rec["job"], now)
            batch.last_seen[rec["job"]] = now
            if store is not None:
                store.save(rec, out["state"], now)
        if progress is not None:
            progress(done, total, out["job"])
    _group_unknown(batch, store)
    batch.records.sort(key=lambda r: r["job"])
    batch.failed.sort(key=lambda f: f["job"])
    if store is not None:
        batch.fingerprint_first_seen = store.first_seen()
        batch.daily = store.daily(now - timedelta(days=HISTORY_DAYS))
    return batch


def _group_unknown(batch: Batch, store: Store | None) -> None:
    """Fingerprints of `unknown` jobs from their mined templates (over every unknown job of the batch)."""
    unknown = [r for r in batch.records if r["category"] == "unknown"]
    if not unknown:
        return
    templates = mine([(r["job"], r["failing_lines"], r["hosts"]) for r in unknown])
    for r in unknown:
        fp = template_fingerprint(r["subcategory"], templates[r["job"]])
        if fp != r["fingerprint"] or r["templates"] != templates[r["job"]]:
            r["fingerprint"], r["templates"] = fp, templates[r["job"]]
            r["title"] = f"Unknown failure: {templates[r['job']][0]}"
            if store is not None:
                stored = store.states([r["job"]]).get(r["job"])
                if stored is not None:
                    store.save(r, stored.state, stored.last_seen)


def since_cutoff(since: str | None, now: datetime) -> datetime | None:
    """'7d', '12h', '30m', '2w' -> the moment that long before now."""
    if not since:
        return None
    units = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
    number, unit = since[:-1], since[-1:]
    if unit not in units or not number.replace(".", "", 1).isdigit():
        raise ValueError(f"--since {since!r}: give a number and a unit (m, h, d, w), e.g. 7d")
    return now - timedelta(**{units[unit]: float(number)})
