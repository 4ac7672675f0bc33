"""A fleet of run dirs for triage tests and benchmarks, made from the corpus: each chosen case
copied several times onto other hosts and pids (host names and pids rewritten consistently in
every text file and path of the copy; nothing else changed), plus healthy jobs (finished
jobs of corpora/healthy copied the same way; where that corpus is absent, the start-up and
progress lines of lab jobs before anything went wrong), one new failure that the
signatures do not know repeated with other numbers, a dir holding only a binary file, and a
path that does not exist.

The new failure's lines are machine-written: mkl-service's message when Intel MKL's threading
layer meets GNU OpenMP (quoted in https://github.com/pytorch/pytorch/issues/37377) and the lines
torchelastic's launcher writes when a worker exits (torch/distributed/elastic/multiprocessing/api.py).
"""

from __future__ import annotations

import random
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CORPORA = Path(__file__).resolve().parent
COMPRESSED = (".gz", ".xz", ".bz2", ".zst", ".zstd")

# where pids are written: launcher summaries, OOM killer, NCCL's host:pid:tid prefix, torch shm files
_PIDS = (
    re.compile(r"\bpid[:= ]\s*(\d{3,7})\b", re.IGNORECASE),
    re.compile(r"\bKilled process (\d{3,7})\b"),
    re.compile(r"\bprocess (\d{3,7})\b"),
    re.compile(r"^\S+?:(\d{3,7}):(\d{3,7}) \[", re.MULTILINE),
    re.compile(r"\btorch_(\d{3,7})_"),
    re.compile(r"\[pid (\d{3,7})\]"),
    re.compile(r"\bcore\.(\d{3,7})\b"),
    re.compile(r"\bLWP (\d{3,7})\b"),
    re.compile(r"^[IWEF]\d{4} [\d:.]+ +(\d{3,7}) ", re.MULTILINE),  # glog's thread id
)
# where hosts are written: torchelastic's summary, NCCL's prefix, syslog's kernel lines
_HOSTS = (
    re.compile(r"^\s*host\s*:\s*([A-Za-z][\w.-]*)\s*$", re.MULTILINE),
    re.compile(r"^([A-Za-z][\w-]*):\d{2,7}:\d{2,7} \[", re.MULTILINE),
    re.compile(r"^\w{3} [ \d]\d [\d:]{8} ([A-Za-z][\w-]*) kernel:", re.MULTILINE),
)
_KEEP_HOSTS = {"localhost", "HOSTNAME", "kernel"}

UNKNOWN_LINES = (
    # vLLM's engine core (v1/engine/core.py): it failed to start, and says not why
    "ERROR 04-30 09:20:11 [core.py:396] EngineCore failed to start.",
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process {pid2} closing signal SIGTERM",
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: {rank} (pid: {pid}) of binary: /usr/bin/python3",
)
_HEALTHY = re.compile(r"process group ready|\bstep \d+ loss\b")


@dataclass
class Fleet:
    jobs: list[Path] = field(default_factory=list)
    origin: dict[Path, str] = field(default_factory=dict)  # job -> the case it copies, or healthy/unknown/binary
    missing: Path | None = None


def cases() -> list[Path]:
    out = []
    for split in ("real", "lab"):
        for d in sorted((CORPORA / split).iterdir()):
            if (d / "case.yaml").is_file():
                out.append(d)
    return out


def choose(n: int) -> list[Path]:
    """n cases spread over the corpus (every category first)."""
    by_cat: dict[str, list[Path]] = {}
    for d in cases():
        cat = str((yaml.safe_load((d / "case.yaml").read_text()) or {}).get("category"))
        by_cat.setdefault(cat, []).append(d)
    chosen: list[Path] = []
    while len(chosen) < n and any(by_cat.values()):
        for cat in sorted(by_cat):
            if by_cat[cat] and len(chosen) < n:
                chosen.append(by_cat[cat].pop(len(by_cat[cat]) // 2))
    return chosen


def _text(path: Path) -> str | None:
    if path.suffix in COMPRESSED:
        return None
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def names_in(case: Path) -> tuple[set[str], set[str]]:
    """The hosts and pids written in a case's files (and its case.yaml's first failing host)."""
    hosts: set[str] = set()
    pids: set[str] = set()
    meta = yaml.safe_load((case / "case.yaml").read_text()) or {}
    host = (meta.get("first_failure") or {}).get("host")
    if host:
        hosts.add(str(host))
    for f in case.rglob("*"):
        if f.is_file() and f.name != "case.yaml" and (text := _text(f)) is not None:
            for rx in _HOSTS:
                hosts.update(m.group(1) for m in rx.finditer(text))
            for rx in _PIDS:
                for m in rx.finditer(text):
                    pids.update(g for g in m.groups() if g)
    return {h for h in hosts if h not in _KEEP_HOSTS}, pids


def copy_case(case: Path, dest: Path, host_map: dict[str, str], pid_map: dict[str, str]) -> None:
    def rewrite(s: str) -> str:
        for old in sorted(host_map, key=len, reverse=True):
            s = re.sub(rf"(?<![\w.-]){re.escape(old)}(?![\w-])", host_map[old], s)
        if pid_map:
            s = re.sub(
                r"(?<![\w.])(" + "|".join(map(re.escape, sorted(pid_map, key=len, reverse=True))) + r")(?!\d)",
                lambda m: pid_map[m.group(1)],
                s,
            )
        return s

    for f in sorted(case.rglob("*")):
        if f.name == "case.yaml" or not f.is_file():
            continue
        target = dest / rewrite(str(f.relative_to(case)))
        target.parent.mkdir(parents=True, exist_ok=True)
        text = _text(f)
        if text is None:
            shutil.copyfile(f, target)
        else:
            target.write_text(rewrite(text), encoding="utf-8")


def _healthy_prefix(log: Path) -> list[str]:
    """The lines of a lab job's console before anything but start-up and progress."""
    lines = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if not _HEALTHY.search(line):
            break
        lines.append(line)
    return lines


def make_fleet(dest: Path, n_cases: int = 32, copies: int = 4, n_healthy: int = 10, n_unknown: int = 12, seed: int = 7) -> Fleet:
    rnd = random.Random(seed)
    fleet = Fleet()
    dest.mkdir(parents=True, exist_ok=True)
    for case in choose(n_cases):
        hosts, pids = names_in(case)
        for c in range(copies):
            job = dest / f"{case.name}-copy{c}"
            host_map = {h: f"gpu{c}-{rnd.randrange(100, 999)}-n{i}" for i, h in enumerate(sorted(hosts))}
            pid_map = {p: str(rnd.randrange(10000, 4000000)) for p in sorted(pids)}
            copy_case(case, job, host_map, pid_map)
            fleet.jobs.append(job)
            fleet.origin[job] = case.name
    healthy = [d for d in sorted((CORPORA / "healthy").glob("*")) if (d / "case.yaml").is_file()]
    prefixes = [] if healthy else [p for d in cases() for f in sorted(d.glob("console.log")) if len(p := _healthy_prefix(f)) >= 3]
    for i in range(n_healthy):
        job = dest / f"healthy-{i:02d}"
        if healthy:  # a finished job from the healthy corpus, on other hosts and pids
            case = healthy[(i * 7) % len(healthy)]
            hosts, pids = names_in(case)
            copy_case(
                case,
                job,
                {h: f"ok{i}-{rnd.randrange(100, 999)}-n{k}" for k, h in enumerate(sorted(hosts))},
                {p: str(rnd.randrange(10000, 4000000)) for p in sorted(pids)},
            )
        else:
            job.mkdir()
            (job / "console.log").write_text("\n".join(prefixes[i % len(prefixes)]) + "\n", encoding="utf-8")
        fleet.jobs.append(job)
        fleet.origin[job] = "healthy"
    for i in range(n_unknown):
        job = dest / f"newfail-{i:02d}"
        job.mkdir()
        pid = rnd.randrange(1000, 4000000)
        values = {"pid": pid, "pid2": pid - 1, "rank": rnd.randrange(0, 8)}
        (job / "train.log").write_text("\n".join(line.format(**values) for line in UNKNOWN_LINES) + "\n", encoding="utf-8")
        fleet.jobs.append(job)
        fleet.origin[job] = "unknown"
    job = dest / "binary-only"
    job.mkdir()
    (job / "blob.bin").write_bytes(bytes(range(256)) * 64)
    fleet.jobs.append(job)
    fleet.origin[job] = "binary"
    fleet.missing = dest / "no-such-job"
    return fleet
