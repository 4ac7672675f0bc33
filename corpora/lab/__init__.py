"""The failure lab: scripts that reproduce training-job failures for real and save each run
directory as a labeled case under corpora/lab/<case-id>/.

Shared machinery lives here (process running with hard time limits, private namespaces,
memory cgroups, dmesg capture, gdb, path normalisation, case.yaml writing); every scenario
module under corpora/lab/scenarios/ uses it.  Run ``python -m corpora.lab --help``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

LAB_DIR = Path(__file__).resolve().parent
REPO_ROOT = LAB_DIR.parent.parent
MAX_CASE_BYTES = 1_000_000
MAX_KEPT_CORE = 2_000_000

#: neutral names used in everything that is saved
JOB_DIR = "/job"  # the scenario's temp dir (where the job ran)
VENV_DIR = "/opt/venv"  # sys.prefix
PY_DIR = "/usr"  # sys.base_prefix
HOME_DIR = "/home/lab"


class Skip(Exception):
    """The scenario cannot run on this machine (no root, no unshare, no cgroup, ...)."""


class NotReproduced(Exception):
    """The scenario ran but the failure it is about did not show up: nothing is saved."""


@dataclass
class Variant:
    """One case: a scenario run with one set of parameters."""

    slug: str  # short description, e.g. "dl-enospc-plain-2w"
    subcategory: str | None
    params: dict
    first_rank: int | None = 0
    first_host: str | None = "labnode1"
    category: str | None = None  # defaults to the scenario's category
    needs: tuple[str, ...] = ()  # extra needs beyond the scenario's


@dataclass
class Result:
    rc: int | None
    output: str  # stdout+stderr interleaved, as a console would show it
    timed_out: bool
    elapsed: float
    pid: int


# --------------------------------------------------------------------------- requirements


def check_needs(needs: Iterable[str]) -> None:
    """Raise Skip with a message when this machine lacks something the scenario needs."""
    for need in needs:
        if need == "root" and os.geteuid() != 0:
            raise Skip("needs root (mount namespaces, cgroups, dmesg)")
        if need == "unshare":
            if not shutil.which("unshare"):
                raise Skip("needs util-linux `unshare`")
            r = subprocess.run(["unshare", "-m", "-u", "true"], capture_output=True, timeout=20)
            if r.returncode != 0:
                raise Skip("`unshare -m -u` is not permitted here: " + r.stderr.decode(errors="replace").strip())
        if need == "cgroup" and memory_cgroup_kind() is None:
            raise Skip(
                "needs a writable memory cgroup (cgroup v2 with the memory controller, or cgroup v1 /sys/fs/cgroup/memory)"
            )
        if need == "dmesg":
            r = subprocess.run(["dmesg"], capture_output=True, timeout=20)
            if r.returncode != 0:
                raise Skip("cannot read the kernel log with `dmesg`")
        if need == "gdb" and not shutil.which("gdb"):
            raise Skip("needs gdb")
        if need == "gcc" and not shutil.which("gcc"):
            raise Skip("needs gcc")
        if need == "g++" and not shutil.which("g++"):
            raise Skip("needs g++")
        if need == "torch":
            try:
                import torch  # noqa: F401
            except ImportError:
                raise Skip(f"needs torch in {sys.executable}") from None


# --------------------------------------------------------------------------- context


class Ctx:
    """Per-case working area: a temp dir, cleanups, and what will be saved."""

    def __init__(self, scenario: str, variant: Variant):
        self.scenario = scenario
        self.variant = variant
        self.tmp = Path(tempfile.mkdtemp(prefix=f"pmlab-{scenario}-"))
        self.cleanups: list[Callable[[], None]] = []
        self.saved: dict[str, bytes] = {}  # relative path -> content
        self.notes: list[str] = []
        self.extra_provenance: dict = {}
        self.real_hostname = socket.gethostname()
        self.pids: list[int] = []

    # ---- running things -----------------------------------------------------------------
    def env(self, **extra: str) -> dict:
        env = dict(os.environ)
        for k in list(env):
            if k.startswith(
                ("TORCHELASTIC_", "MASTER_", "RANK", "LOCAL_RANK", "WORLD_SIZE", "PYTHONFAULTHANDLER", "TORCH_", "NCCL_", "GLOO_")
            ):
                del env[k]
        env.update(
            OMP_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            PYTHONUNBUFFERED="1",
            PYTHONDONTWRITEBYTECODE="1",
            GLOO_SOCKET_IFNAME="lo",
            HOME=str(self.tmp / "home"),
            TMPDIR=str(self.tmp / "tmp"),
        )
        (self.tmp / "home").mkdir(exist_ok=True)
        (self.tmp / "tmp").mkdir(exist_ok=True)  # torchrun's own temp files: shown as /tmp
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def start(
        self, cmd: list[str], *, env: dict | None = None, cwd: Path | None = None, core: bool = False, out_name: str | None = None
    ) -> subprocess.Popen:
        """Start cmd in its own session, stdout+stderr interleaved into one file (as a
        console or a scheduler's output file would hold them).  finish() collects it."""
        out_path = self.tmp / (out_name or f".out-{len(self.pids)}")

        def preexec():
            import resource

            lim = resource.RLIM_INFINITY if core else 0
            resource.setrlimit(resource.RLIMIT_CORE, (lim, lim))

        with open(out_path, "wb") as out:
            proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=str(cwd or self.tmp),
                env=env or self.env(),
                start_new_session=True,
                preexec_fn=preexec,
            )
        proc.out_path = out_path  # type: ignore[attr-defined]
        proc.t0 = time.monotonic()  # type: ignore[attr-defined]
        self.pids.append(proc.pid)
        self.cleanups.append(lambda pg=proc.pid: _killpg(pg))
        return proc

    def finish(self, proc: subprocess.Popen, timeout: float) -> Result:
        timed_out = False
        try:
            proc.wait(timeout=max(1.0, timeout - (time.monotonic() - proc.t0)))
        except subprocess.TimeoutExpired:
            timed_out = True
            _killpg(proc.pid)
            proc.wait(timeout=30)
        finally:
            _killpg(proc.pid)  # stragglers of the session
        return Result(
            proc.returncode,
            proc.out_path.read_bytes().decode("utf-8", errors="replace"),
            timed_out,
            time.monotonic() - proc.t0,
            proc.pid,
        )

    def run(
        self,
        cmd: list[str],
        *,
        timeout: float,
        env: dict | None = None,
        cwd: Path | None = None,
        during: Callable[[subprocess.Popen, Path], None] | None = None,
        core: bool = False,
    ) -> Result:
        """Run cmd with a hard time limit; kill its whole session on timeout and after exit.
        `during(proc, outfile)` runs while it runs (to send signals, truncate files, ...)."""
        proc = self.start(cmd, env=env, cwd=cwd, core=core)
        if during is not None:
            try:
                during(proc, proc.out_path)
            except Exception:
                _killpg(proc.pid)
                raise
        return self.finish(proc, timeout)

    def wait_for(self, proc: subprocess.Popen, pattern: str, timeout: float, path: Path | None = None) -> bool:
        """Wait until pattern (regex) shows up in proc's output (or in path)."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern, re.M)
        while time.monotonic() < deadline:
            try:
                text = (path or proc.out_path).read_text(errors="replace")
            except OSError:
                text = ""
            if rx.search(text):
                return True
            if proc.poll() is not None:
                return False
            time.sleep(0.2)
        return False

    def ns(self, cmd: list[str], **kw) -> list[str]:
        """cmd in a private mount + UTS namespace (see ns_cmd)."""
        return ns_cmd(cmd, workdir=self.tmp, **kw)

    def python(self) -> list[str]:
        return [sys.executable]

    def torchrun(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "torch.distributed.run", *args]

    def launch(
        self,
        nproc: int,
        logging: str = "console",
        rdzv: str = "standalone",
        nnodes: int = 1,
        node_rank: int = 0,
        port: int | None = None,
        extra: tuple[str, ...] = (),
    ) -> list[str]:
        """torchrun arguments up to (not including) the script.  logging: console | tee |
        redirects (both with --log-dir logs).  rdzv: standalone, c10d on labnode1:port, or
        static (--master-addr labnode1 --master-port port --node-rank: node_rank decides which
        global ranks a node gets, node_rank * nproc + local rank)."""
        args = []
        if rdzv == "standalone":
            args += ["--standalone", "--nnodes", "1"]
        else:
            self.port = port or getattr(self, "port", None) or free_port()
            args += ["--nnodes", str(nnodes), "--node-rank", str(node_rank)]
            if rdzv == "static":
                args += ["--master-addr", "labnode1", "--master-port", str(self.port)]
            else:
                args += ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"labnode1:{self.port}", "--rdzv-id", "job"]
        args += ["--nproc-per-node", str(nproc)]
        if logging == "tee":
            args += ["--log-dir", "logs", "--tee", "3"]
        elif logging == "redirects":
            args += ["--log-dir", "logs", "--redirects", "3"]
        return self.torchrun(*args, *extra)

    def write(self, name: str, text: str) -> Path:
        p = self.tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p

    # ---- saving ---------------------------------------------------------------------------
    def save_text(self, rel: str, text: str) -> None:
        self.saved[rel] = self.normalize(text).encode()

    def save_file(self, rel: str, path: Path) -> None:
        data = path.read_bytes()
        try:
            self.saved[rel] = self.normalize(data.decode("utf-8")).encode()
        except UnicodeDecodeError:
            self.saved[rel] = data

    def save_tree(self, rel: str, root: Path) -> None:
        """Copy a directory tree (e.g. torchrun's --log-dir) as it is, paths normalised."""
        if not root.exists():
            return
        for p in sorted(root.rglob("*")):
            if p.is_file():
                name = self.normalize(str(p.relative_to(root)))
                self.save_file(f"{rel}/{name}" if rel else name, p)

    def normalize(self, text: str) -> str:
        reps = [
            (str(self.tmp / "tmp"), "/tmp"),
            (str(self.tmp / "home"), HOME_DIR),
            (str(self.tmp), JOB_DIR),
            (os.path.realpath(str(self.tmp)), JOB_DIR),
            (sys.prefix, VENV_DIR),
            (os.path.realpath(sys.prefix), VENV_DIR),
            (sys.base_prefix, PY_DIR),
            (os.path.realpath(sys.base_prefix), PY_DIR),
            (str(REPO_ROOT), "/src/postmortem"),
            (tempfile.gettempdir() + "/", "/tmp/"),
        ]
        home = os.path.expanduser("~")
        if home not in ("/", ""):
            reps.append((home + "/", HOME_DIR + "/"))
        reps = sorted({(a, b) for a, b in reps if a and a != b}, key=lambda ab: -len(ab[0]))
        for a, b in reps:
            text = text.replace(a, b)
        # the pmlab temp-dir names of other runs, if any leaked
        text = re.sub(r"/tmp/pmlab-[A-Za-z_]+-[A-Za-z0-9_]+", JOB_DIR, text)
        h = self.real_hostname
        if h and not h.startswith("labnode"):
            text = re.sub(rf"(?<![\w.-]){re.escape(h)}(?![\w-])(?!\.\w)", "labnode1", text)
        return text

    def cleanup(self) -> None:
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - cleanup must go on
                print(f"  cleanup: {e}", file=sys.stderr)
        shutil.rmtree(self.tmp, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def root_cause(out: str) -> dict | None:
    """rank and host of torchrun's "Root Cause (first observed failure)" block."""
    m = re.search(r"Root Cause \(first observed failure\):\s*\n\[\d+\]:\s*\n((?:\s+\w+\s*:.*\n?)+)", out)
    if not m:
        return None
    block = m.group(1)
    rank = re.search(r"^\s*rank\s*:\s*(\d+)", block, re.M)
    host = re.search(r"^\s*host\s*:\s*(\S+)", block, re.M)
    h = host.group(1) if host else None
    if h in ("localhost", "localhost.localdomain"):
        # the agent ran on labnode1 (its reverse lookup of 127.0.0.1 says localhost)
        h = "labnode1"
    return {"rank": int(rank.group(1)) if rank else None, "host": h}


def require_root_cause(out: str) -> dict:
    """root_cause(out), or NotReproduced when torchrun wrote no Root Cause block."""
    rc = root_cause(out)
    if rc is None:
        raise NotReproduced("no torchrun Root Cause block")
    return rc


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


# --------------------------------------------------------------------------- namespaces


def ns_cmd(
    cmd: list[str],
    *,
    workdir: Path,
    hostname: str | None = "labnode1",
    shm_size: str | None = None,
    tmpfs: tuple[str, str] | None = None,
) -> list[str]:
    """Wrap cmd so it runs in a private mount + UTS namespace: the hostname is a neutral
    one (the processes really see it), /dev/shm optionally a small tmpfs, and optionally
    another small tmpfs mounted at a path.  Everything disappears with the namespace."""
    steps = []
    if hostname:
        # the neutral host names resolve (to loopback) inside the namespace only: a private
        # copy of /etc/hosts is bind-mounted over the real one
        hosts = Path(workdir) / ".etc-hosts"
        base = Path("/etc/hosts").read_text() if Path("/etc/hosts").exists() else ""
        # one loopback address per node (as Debian's 127.0.1.1 line), so that reverse lookups
        # (torchrun's "host :" field, getfqdn) give the node name, not "localhost"
        hosts.write_text(base.rstrip("\n") + "\n" + "".join(f"127.0.1.{i} labnode{i}\n" for i in range(1, 5)))
        steps.append(f"hostname {hostname}")
        steps.append(f"mount --bind '{hosts}' /etc/hosts")
    if shm_size:
        steps.append(f"mount -t tmpfs -o size={shm_size} tmpfs /dev/shm")
    if tmpfs:
        path, size = tmpfs
        steps.append(f"mkdir -p '{path}' && mount -t tmpfs -o size={size} tmpfs '{path}'")
    steps.append('exec "$@"')
    return ["unshare", "-m", "-u", "--propagation", "private", "sh", "-c", " && ".join(steps), "sh", *cmd]


# --------------------------------------------------------------------------- kernel log


def dmesg_lines(human: bool = False) -> list[str]:
    r = subprocess.run(["dmesg", "-T"] if human else ["dmesg"], capture_output=True, timeout=30)
    return r.stdout.decode(errors="replace").splitlines()


class DmesgWindow:
    """Take `dmesg` before and after the event; keep only the lines written in between."""

    def __init__(self):
        self.before = dmesg_lines()

    def new_lines(self, human: bool = False) -> list[str]:
        after = dmesg_lines()
        before_set = set(self.before)
        # the log only grows: everything from the first stamped line that was not there before
        first = next((i for i, line in enumerate(after) if line not in before_set and line.startswith("[")), len(after))
        new_idx = list(range(first, len(after)))
        if not human:
            return [after[i] for i in new_idx]
        after_h = dmesg_lines(human=True)
        if len(after_h) != len(after):  # lines arrived in between: fall back to raw
            return [after[i] for i in new_idx]
        return [after_h[i] for i in new_idx]


# --------------------------------------------------------------------------- memory cgroup


def memory_cgroup_kind() -> str | None:
    root = Path("/sys/fs/cgroup")
    try:
        if (root / "cgroup.controllers").exists() and "memory" in (root / "cgroup.controllers").read_text().split():
            return "v2" if os.access(root, os.W_OK) else None
        if (root / "memory" / "memory.limit_in_bytes").exists():
            return "v1" if os.access(root / "memory", os.W_OK) else None
    except OSError:
        return None
    return None


class MemCgroup:
    """A memory cgroup with a hard limit and no swap; a process joins by writing its pid to
    `procs`.  Removed (members killed first) by cleanup()."""

    def __init__(self, name: str, limit_bytes: int):
        kind = memory_cgroup_kind()
        if kind is None:
            raise Skip("no writable memory cgroup")
        self.kind = kind
        root = Path("/sys/fs/cgroup") if kind == "v2" else Path("/sys/fs/cgroup/memory")
        self.path = root / name
        if self.path.exists():
            self._remove()
        if kind == "v2":
            sub = (root / "cgroup.subtree_control").read_text().split()
            if "memory" not in sub:
                (root / "cgroup.subtree_control").write_text("+memory")
        self.path.mkdir()
        if kind == "v2":
            (self.path / "memory.max").write_text(str(limit_bytes))
            if (self.path / "memory.swap.max").exists():
                (self.path / "memory.swap.max").write_text("0")
        else:
            (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))
            memsw = self.path / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                with contextlib.suppress(OSError):
                    memsw.write_text(str(limit_bytes))
        self.procs = self.path / "cgroup.procs"

    def _remove(self) -> None:
        for _ in range(50):
            try:
                pids = [int(x) for x in (self.path / "cgroup.procs").read_text().split()]
            except OSError:
                pids = []
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.2)
        print(f"  cleanup: could not remove {self.path}", file=sys.stderr)

    def cleanup(self) -> None:
        if self.path.exists():
            self._remove()


# --------------------------------------------------------------------------- gdb


def gdb_core_text(exe: str, core: Path, timeout: float = 120) -> str:
    """`thread apply all bt` and `info proc mappings` of a core, as gdb prints them."""
    cmd = [
        "gdb",
        "-nx",
        "-batch",
        "-q",
        "-iex",
        "set auto-load off",
        "-iex",
        "set debuginfod enabled off",
        "-ex",
        "set confirm off",
        "-ex",
        "set pagination off",
        "-ex",
        "set width 0",
        "-ex",
        "info program",
        "-ex",
        "p $_siginfo",
        "-ex",
        "thread apply all bt",
        "-ex",
        "info proc mappings",
        exe,
        str(core),
    ]
    r = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")


# --------------------------------------------------------------------------- case writing


def write_case(
    case_id: str,
    category: str,
    variant: Variant,
    ctx: Ctx,
    script: str,
    first_failure: dict | None = None,
    dest_root: Path = LAB_DIR,
) -> Path:
    import yaml

    dest = dest_root / case_id
    total = sum(len(b) for b in ctx.saved.values())
    if total > MAX_CASE_BYTES:
        raise NotReproduced(f"case would be {total} bytes (> {MAX_CASE_BYTES})")
    tmp_dest = dest_root / f".{case_id}.new"
    shutil.rmtree(tmp_dest, ignore_errors=True)
    tmp_dest.mkdir(parents=True)
    for rel, data in ctx.saved.items():
        p = tmp_dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    ff = first_failure or {"rank": variant.first_rank, "host": variant.first_host}
    prov = {
        "kind": "lab",
        "script": f"corpora/lab/scenarios/{script}.py",
        "params": dict(variant.params),
        "generated": _dt.date.today().isoformat(),
    }
    prov.update(ctx.extra_provenance)
    notes = [f"variant: {variant.slug}"] + ctx.notes
    prov["notes"] = "; ".join(notes)
    case = {
        "id": case_id,
        "category": category,
        "subcategory": variant.subcategory,
        "first_failure": ff,
        "expected_signatures": [],
        "split": "lab",
        "provenance": prov,
    }
    (tmp_dest / "case.yaml").write_text(yaml.safe_dump(case, sort_keys=False, width=100))
    shutil.rmtree(dest, ignore_errors=True)
    tmp_dest.rename(dest)
    return dest


def need_in(output: str, *patterns: str) -> None:
    """Raise NotReproduced unless every regex is found in output."""
    for pat in patterns:
        if not re.search(pat, output, re.M):
            raise NotReproduced(f"expected /{pat}/ in the output")
