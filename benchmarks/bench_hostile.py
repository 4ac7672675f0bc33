"""Hostile inputs against their bounds, with the default limits (the issue's two time targets):

* a gzip of 1,536 members, each 16 MiB of log lines, that expands to 24 GiB: `analyze` must stop
  at the per-file limit (2 GiB by default) with a note, in well under 30 s;
* 10M matching NCCL WARN lines (~700 MB): the work after the 20,000-region cap is bounded;
* 20,000 lines that each begin a Python traceback (`Traceback (most recent call last):`, every
  block overlapping the next 400 lines), against a log of as many ordinary lines with one
  traceback, timed in the same run: each line is decoded once, not once per block holding it.

Each is timed as a fresh `python -m analyzer analyze DIR --format json` process; the note the
report gives is printed. Data is written to a temp dir and removed.
Usage: python benchmarks/bench_hostile.py [--tmp /tmp]
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LINE = b"[rank2]: step 100 loss 2.3412 lr 0.0001 tokens/s 81234\n"
OOM = b"[rank2]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 336.00 MiB.\n"
WARN = b"node0:1234:1250 [0] NCCL WARN NET/IB : Got async event : port error\n"


def analyze(run: Path) -> tuple[float, dict[str, object]]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "analyzer", "analyze", str(run), "--format", "json"], capture_output=True)
    secs = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.decode()[-2000:])
    return secs, json.loads(proc.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tmp", default=tempfile.gettempdir())
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hostile-", dir=args.tmp) as tmp_s:
        tmp = Path(tmp_s)
        bomb = tmp / "bomb"
        bomb.mkdir()
        member = gzip.compress(LINE * ((16 << 20) // len(LINE)), compresslevel=9)
        with (bomb / "rank2.log.gz").open("wb") as f:
            f.write(gzip.compress(OOM))
            for _ in range(1536):
                f.write(member)
        secs, report = analyze(bomb)
        src = report["sources"][0]  # type: ignore[index]
        print(
            f"gzip bomb ({(bomb / 'rank2.log.gz').stat().st_size / 2**20:.0f} MiB, expands to 24 GiB): {secs:.1f} s; note: {src['note']}"
        )
        (bomb / "rank2.log.gz").unlink()
        flood = tmp / "flood"
        flood.mkdir()
        with (flood / "nccl.node0.log").open("wb") as f:
            block = WARN * 100000
            for _ in range(100):
                f.write(block)
        secs, report = analyze(flood)
        src = report["sources"][0]  # type: ignore[index]
        print(
            f"10M matching NCCL WARN lines ({(flood / 'nccl.node0.log').stat().st_size / 2**20:.0f} MiB): {secs:.1f} s; note: {src['note']}"
        )
        (flood / "nccl.node0.log").unlink()
        for name, text in (
            ("plain", LINE * 19999 + b"Traceback (most recent call last):\n"),
            ("headers", b"Traceback (most recent call last):\n" * 20000),
        ):
            run = tmp / name
            run.mkdir()
            (run / "train.log").write_bytes(text)
        plain, _ = analyze(tmp / "plain")
        secs, report = analyze(tmp / "headers")
        print(f"20,000 traceback headers: {secs:.1f} s, x{secs / plain:.1f} a log of as many ordinary lines ({plain:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
