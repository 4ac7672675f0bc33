"""Scan throughput on a realistic training log, as ratios to GNU grep on the same file.

The log (~100 MB by default, deterministic: NCCL INFO chatter, rank-prefixed step/loss lines,
tqdm bars, warnings, a CUDA OOM traceback and the launcher's report at the end) is written to a
temp dir. Measured in the same run, on the same file (page cache warm), with the real patterns
(parsers' triggers + signatures + the context pattern, `analyze`'s scanner):

* the Hyperscan engine (when `hyperscan` imports), the portable Python engine;
* the reference: `grep -c -E -f FILE` where FILE holds, per pattern, its required literals
  (`-i` for the caseless ones run as a second grep), i.e. GNU grep doing the literal part of the
  work; and `grep -c -F` with the same literals.

Peak memory: tracemalloc peak of the scan (Python allocations) and the process's ru_maxrss.
Usage: python benchmarks/bench_scan.py [--mb 100] [--repeat 3] [--skip-python]
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analyzer.events.ingest import CONTEXT_CAP, CONTEXT_OWNER, build_scanner  # noqa: E402
from analyzer.scan.literals import required_literals  # noqa: E402
from analyzer.scan.scanner import HAVE_HYPERSCAN, Scanner  # noqa: E402
from analyzer.signatures.loader import database, line_patterns  # noqa: E402
from analyzer.sources.reader import iter_chunks  # noqa: E402
from tests.scan.synth import write_training_log  # noqa: E402

_ERE_SPECIAL = re.compile(rb"[\\.\[\]()*+?{}|^$]")


def _median_seconds(fn: object, repeat: int) -> tuple[float, object]:
    times = []
    out = None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-python", action="store_true", help="do not time the portable engine (slow on big files)")
    args = parser.parse_args()
    patterns = build_scanner(line_patterns(database())).patterns
    caps = {CONTEXT_OWNER: CONTEXT_CAP}
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as tmp:
        log = Path(tmp) / "train.log"
        t0 = time.perf_counter()
        nlines = write_training_log(log, args.mb << 20)
        size = log.stat().st_size
        print(f"log: {size / 1e6:.1f} MB, {nlines} lines (written in {time.perf_counter() - t0:.1f}s); {len(patterns)} patterns")

        cs: set[bytes] = set()
        ci: set[bytes] = set()
        for p in patterns:
            req = required_literals(p.regex, p.ignore_case)
            if req is not None:
                (ci if req[1] else cs).update(req[0])
        for name, lits in (("cs", cs), ("ci", ci)):
            (Path(tmp) / f"{name}.F").write_bytes(b"\n".join(sorted(lits)) + b"\n")
            (Path(tmp) / f"{name}.E").write_bytes(b"\n".join(_ERE_SPECIAL.sub(rb"\\\g<0>", s) for s in sorted(lits)) + b"\n")
        rows: list[tuple[str, float, str]] = []
        grep = shutil.which("grep")
        if grep:

            def run_grep(mode: str) -> str:
                a = subprocess.run(
                    [grep, "-c", mode, "-f", str(Path(tmp) / f"cs.{mode[1:]}"), str(log)], capture_output=True, text=True
                )
                b = subprocess.run(
                    [grep, "-c", "-i", mode, "-f", str(Path(tmp) / f"ci.{mode[1:]}"), str(log)], capture_output=True, text=True
                )
                if a.returncode > 1 or b.returncode > 1:
                    raise SystemExit(f"grep failed: {a.stderr}{b.stderr}")
                return f"{a.stdout.strip()}+{b.stdout.strip()} lines"

            run_grep("-F")  # warm the page cache
            for mode in ("-E", "-F"):
                secs, out = _median_seconds(lambda m=mode: run_grep(m), args.repeat)
                rows.append((f"grep -c {mode} ({len(cs)}+{len(ci)} literals)", secs, str(out)))

        engines = (["hyperscan"] if HAVE_HYPERSCAN else []) + ([] if args.skip_python else ["python"])
        results = {}
        for engine in engines:
            t0 = time.perf_counter()
            scanner = Scanner(patterns, caps=caps, engine=engine)
            built = time.perf_counter() - t0

            def scan(s: Scanner = scanner) -> object:
                return s.scan(iter_chunks(log, None))

            secs, res = _median_seconds(scan, 1 if engine == "python" else args.repeat)
            tracemalloc.start()
            scan()
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            results[engine] = [(h.line_no, h.owners) for h in res.hits]  # type: ignore[attr-defined]
            extra = (
                f"; left to Python re: {len(scanner.python_only)}, prefilter mode: {len(scanner.prefiltered)}"
                if engine == "hyperscan"
                else ""
            )
            rows.append(
                (
                    f"Scanner engine={engine}",
                    secs,
                    f"{len(res.hits)} hits, build {built:.2f}s, tracemalloc peak {peak / 2**20:.1f} MiB{extra}",
                )
            )  # type: ignore[attr-defined]

    ref = next((s for name, s, _ in rows if name.startswith("grep -c -E")), None)
    print(f"median of {args.repeat} runs (the Python engine: 1 run)")
    for name, secs, note in rows:
        ratio = f"  x{secs / ref:.2f} grep -E time" if ref else ""
        print(f"{name:<40} {secs:7.2f}s {size / secs / 1e6:8.1f} MB/s{ratio}  ({note})")
    if len(results) == 2:
        print("engines agree:", results["hyperscan"] == results["python"])
    print(f"ru_maxrss of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
