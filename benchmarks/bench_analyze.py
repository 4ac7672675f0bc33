"""`postmortem analyze` on a generated 64-rank run dir against ripgrep over the same files.

For each size (default 1 and 4 GiB): 64 rank logs (each rank's NCCL start-up, its rank-prefixed
step lines, tqdm bars, warnings; rank 3 ends in a CUDA OOM and the launcher's report; a few
distinct files generated, the other ranks copies with their own rank prefix) are written under a
temp dir. Then, in the same run and alternating, with the page cache warm:

* `postmortem analyze DIR --format json -o FILE` (a fresh process, as a user runs it: every
  CPU when the run dir is big enough), and the same with `--jobs 1` (one process);
* the reference: ripgrep (every CPU) counting the lines that hold any of the scanner's required
  literals (`rg -c -F -f`, the caseless ones in a second `rg -i`), i.e. ripgrep doing the literal
  part of the work over the same files.

`analyze` runs with its bytecode compiled once beforehand (into the temp dir), as an installed
package does; one run before the timed ones fills that and the scan database's cache.

Reported: the median wall time of `--repeat` runs, the ratio to ripgrep's time, the CPU time, the
peak RSS (GNU time's %M: the largest resident set of any one process: the main one or a worker),
and the peak of the PSS of the main process and its workers summed (sampled every 50 ms; pages a
forked worker shares with its parent counted once).
The machine may be shared: ratios measured in the same run are what to compare, not seconds.
Usage: python benchmarks/bench_analyze.py [--gib 1 4] [--repeat 3] [--tmp /tmp] [--baseline OTHER_CHECKOUT]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analyzer.events.ingest import build_scanner  # noqa: E402
from analyzer.scan.literals import required_literals  # noqa: E402
from analyzer.signatures.loader import database, line_patterns  # noqa: E402
from tests.scan.synth import _FAILURE, _nccl_init, _step_line  # noqa: E402

RANKS = 64
DISTINCT = 4  # distinct files generated; the other ranks are copies


def write_rank_log(path: Path, rank: int, size: int) -> None:
    """One rank's log: its NCCL start-up, then step lines of this rank (tests/scan/synth.py's
    line makers), and for rank 3 the OOM traceback and the launcher's report at the end."""
    rng = random.Random(rank)
    host = f"node-{rank // 8}"
    lines = _nccl_init(rng, rank, host, 40000 + rank, RANKS)
    tail = _FAILURE.encode() if rank == 3 else b""
    written = 0
    step = 0
    with path.open("wb") as out:
        while True:
            while len(lines) < 4096:
                lines.append(_step_line(rng, rank, step, 10**7))
                step += 1
            data = ("\n".join(lines) + "\n").encode()
            lines = []
            if written + len(data) + len(tail) > size:
                keep = data[: max(0, size - written - len(tail))]
                out.write(keep[: keep.rfind(b"\n") + 1])
                break
            out.write(data)
            written += len(data)
        out.write(tail)


def make_run_dir(root: Path, total: int) -> None:
    per = total // RANKS
    made: dict[int, Path] = {}
    for r in range(RANKS):
        path = root / f"rank{r}.log"
        if r == 3 or len(made) < DISTINCT:
            write_rank_log(path, r, per)
            made.setdefault(r, path)
        else:
            src = list(made.values())[r % len(made)]
            data = src.read_bytes().replace(f"[rank{r % DISTINCT}]".encode(), f"[rank{r}]".encode())
            path.write_bytes(data)


def literal_files(tmp: Path) -> tuple[Path, Path]:
    cs: set[bytes] = set()
    ci: set[bytes] = set()
    for p in build_scanner(line_patterns(database())).patterns:
        req = required_literals(p.regex, p.ignore_case)
        if req is not None:
            (ci if req[1] else cs).update(req[0])
    a, b = tmp / "cs.txt", tmp / "ci.txt"
    a.write_bytes(b"\n".join(sorted(cs)) + b"\n")
    b.write_bytes(b"\n".join(sorted(ci)) + b"\n")
    return a, b


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            continue
    return out


def _pss_kib(pids: list[int]) -> int:
    """The proportional set size of these processes together (pages shared by a forked worker
    and its parent counted once)."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith("Pss:")), 0)
        except OSError:
            continue
    return total


def timed(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, int, float, int]:
    """Wall seconds, peak RSS (KiB: the largest single process, GNU time's %M), CPU seconds (user
    + system, with the children waited for) and the peak of the summed PSS of the process and
    all its workers (KiB, sampled every 50 ms) of a command run under GNU time."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        ["/usr/bin/time", "-f", "%M %U %S", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd
    )
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _pss_kib(_tree(proc.pid)[1:]))  # not GNU time itself
        time.sleep(0.05)  # a sample costs about 1 ms of CPU: more often would slow what is measured
    secs = time.perf_counter() - start
    stderr = proc.stderr.read() if proc.stderr else ""
    if proc.returncode not in (0, 1):  # rg: 1 = no match
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {stderr[-2000:]}")
    rss, user, sys_ = stderr.strip().splitlines()[-1].split()
    return secs, int(rss), float(user) + float(sys_), peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tmp", default=tempfile.gettempdir())
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another checkout of postmortem (e.g. an older commit) whose analyze is timed in the same run",
    )
    args = parser.parse_args()
    rg = shutil.which("rg")
    if rg is None:
        raise SystemExit("ripgrep (rg) is needed: apt-get install -y ripgrep")
    env_py = sys.executable
    print(f"CPUs: {len(os.sched_getaffinity(0))}; median of {args.repeat} runs; load average {os.getloadavg()[0]:.1f}")
    for gib in args.gib:
        with tempfile.TemporaryDirectory(prefix="bench-analyze-", dir=args.tmp) as tmp_s:
            tmp = Path(tmp_s)
            run = tmp / "run"
            run.mkdir()
            t0 = time.perf_counter()
            make_run_dir(run, int(gib * (1 << 30)))
            size = sum(p.stat().st_size for p in run.iterdir())
            cs, ci = literal_files(tmp)
            print(f"\n{RANKS} rank logs, {size / 2**30:.2f} GiB (written in {time.perf_counter() - t0:.0f} s)")
            analyze = [env_py, "-m", "analyzer", "analyze", str(run), "--format", "json", "-o"]
            # as an installed package runs: its modules' bytecode compiled once (pip does that at
            # install), here into the temp dir, whatever PYTHONDONTWRITEBYTECODE says
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
            cmds = {
                "ripgrep (rg -c -F, both cases)": None,
                "postmortem analyze": [*analyze, str(tmp / "r.json")],
                "postmortem analyze --jobs 1": [*analyze, str(tmp / "r1.json"), "--jobs", "1"],
            }
            if args.baseline:  # run from that checkout: `python -m analyzer` imports its package
                cmds["baseline analyze"] = [*analyze, str(tmp / "r0.json")]
                timed(cmds["baseline analyze"], env, args.baseline)
            rg_cmds = [
                [rg, "--no-ignore", "-c", "-F", "-f", str(cs), str(run)],
                [rg, "--no-ignore", "-c", "-i", "-F", "-f", str(ci), str(run)],
            ]
            for c in rg_cmds:  # warm the page cache
                timed(c)
            timed([*analyze, str(tmp / "r.json")], env)  # and the bytecode and scan caches
            times: dict[str, list[float]] = {k: [] for k in cmds}
            rss: dict[str, int] = dict.fromkeys(cmds, 0)
            pss: dict[str, int] = dict.fromkeys(cmds, 0)
            cpu: dict[str, list[float]] = {k: [] for k in cmds}
            for _ in range(args.repeat):
                for name, cmd in cmds.items():
                    if cmd is None:
                        secs = used = 0.0
                        for c in rg_cmds:
                            s, m, u, p = timed(c)
                            secs += s
                            used += u
                            rss[name], pss[name] = max(rss[name], m), max(pss[name], p)
                    else:
                        secs, m, used, p = timed(cmd, env, args.baseline if name == "baseline analyze" else None)
                        rss[name], pss[name] = max(rss[name], m), max(pss[name], p)
                    times[name].append(secs)
                    cpu[name].append(used)
            ref = statistics.median(times["ripgrep (rg -c -F, both cases)"])
            for name in cmds:
                med = statistics.median(times[name])
                print(
                    f"  {name:<34} {med:7.2f} s  x{med / ref:.2f} ripgrep  peak RSS {rss[name] / 1024:4.0f} MiB "
                    f"(all processes: PSS {pss[name] / 1024:4.0f} MiB)  CPU {statistics.median(cpu[name]):5.2f} s  "
                    f"runs {[round(t, 2) for t in times[name]]}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
