"""Jobs per second of `triage` with --jobs 1 and --jobs 2 (and their time ratio), and through a
local Dask cluster (two worker processes started here), on N run dirs made by copying corpus
cases onto other hosts and pids (corpora/fleet.py). The reference is --jobs 1 in the same run.

Usage: python benchmarks/bench_triage.py [--cases 32] [--copies 4] [--repeat 3] [--no-dask]
Each timing is the median of --repeat runs of the whole batch (no history database, so every
job is analyzed each time); the process pool's start-up is counted.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analyzer.triage.run import triage  # noqa: E402
from corpora.fleet import make_fleet  # noqa: E402


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _median(fn: object, repeat: int) -> tuple[float, float]:
    """Median wall seconds, and the CPU seconds this process and its reaped children used per run
    (divided by the wall time: how many cores the batch really got on a shared machine)."""
    times, cpu = [], []
    for _ in range(repeat):
        c0, start = _cpu(), time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
        cpu.append(_cpu() - c0)
    return statistics.median(times), statistics.median(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=32)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-triage-") as tmp:
        fleet = make_fleet(Path(tmp) / "runs", n_cases=args.cases, copies=args.copies)
        jobs = [str(j) for j in fleet.jobs]
        n = len(jobs)
        triage(jobs[:4], jobs=1)  # warm the signature cache once, outside the timings
        verdicts = {}

        def run(**kw: object):  # type: ignore[no-untyped-def]
            def go() -> None:
                batch = triage(jobs, **kw)  # type: ignore[arg-type]
                verdicts[str(kw)] = [(r["job"], r["category"], r["fingerprint"]) for r in batch.records]

            return go

        t1, c1 = _median(run(jobs=1), args.repeat)
        t2, c2 = _median(run(jobs=2), args.repeat)
        print(f"cores available: {len(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.1f}, jobs: {n}")
        print(f"--jobs 1: {t1:6.2f} s  {n / t1:7.1f} jobs/s  (cores used {c1 / t1:.2f})")
        print(f"--jobs 2: {t2:6.2f} s  {n / t2:7.1f} jobs/s  (cores used {c2 / t2:.2f})")
        print(f"--jobs 2 / --jobs 1 time ratio: {t2 / t1:.2f}")
        if not args.no_dask:
            from distributed import LocalCluster

            with LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1"
            ) as cluster:
                triage(jobs[:4], scheduler=cluster.scheduler_address)  # workers load the signatures once
                td, _ = _median(run(scheduler=cluster.scheduler_address), args.repeat)
            print(f"dask (2 local workers): {td:6.2f} s  {n / td:7.1f} jobs/s  (time ratio to --jobs 1: {td / t1:.2f})")
        same = len({tuple(v) for v in verdicts.values()}) == 1
        print(f"same verdicts and fingerprints in every mode: {same}")
        return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
