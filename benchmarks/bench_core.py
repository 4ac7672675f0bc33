"""Time analyze_core on a real 64-thread core, as a ratio to plain gdb on the same core.

The reference, measured in the same run: `gdb --nx -batch -ex 'thread apply all bt' EXE CORE`.
Usage: python benchmarks/bench_core.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "native"))

import cores  # noqa: E402

from analyzer.sources.coredump import analyze_core  # noqa: E402


def _median_seconds(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-core-") as tmp:
        out = Path(tmp)
        exe = cores.compile_c("threads64", out)
        core = cores.make_core([str(exe)], out)
        reference_cmd = ["gdb", "--nx", "-batch", "-iex", "set auto-load off", "-ex", "thread apply all bt", str(exe), str(core)]

        def reference() -> None:
            subprocess.run(reference_cmd, capture_output=True, check=True)

        def ours() -> None:
            info = analyze_core(core, exe=exe)
            assert len(info.backtrace.threads) >= 65

        reference()
        ours()  # warm the page cache for both
        ref = _median_seconds(reference, args.repeat)
        mine = _median_seconds(ours, args.repeat)
    print(f"core: 65 threads; median of {args.repeat} runs")
    print(f"gdb -batch 'thread apply all bt': {ref * 1000:.0f} ms")
    print(f"analyze_core:                     {mine * 1000:.0f} ms")
    print(f"ratio analyze_core / gdb:          {mine / ref:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
