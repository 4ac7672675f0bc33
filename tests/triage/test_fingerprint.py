"""The report's fingerprint: the same failure elsewhere gets the same one; two categories never
share one; a core's crash signature stands for its frames."""

from __future__ import annotations

import subprocess
import sys

from analyzer.model import Category, Event, EventKind, Finding, Location, Role
from analyzer.report.fingerprint import fingerprint, mask_line

from ..conftest import REPO


def _finding(
    message: str, host: str | None = None, pid: int | None = None, kind: EventKind = EventKind.LINE, **fields: object
) -> Finding:
    event = Event(
        kind, Location("node/rank3.log", 17), message, message, rank=3, host=host, pid=pid, time=1.7e9, fields=dict(fields)
    )
    return Finding("shm.nccl_shm_open", "t", Category.SHM, "shm.nccl_shm", Role.ROOT_CAUSE, 0.9, "s", event)


SHM = "{h}:{p}:{t} [0] NCCL WARN Error: failed to extend /dev/shm/nccl-{x} to 9637892 bytes, leaving {n} bytes"


def test_same_failure_on_other_hosts_pids_and_sizes() -> None:
    a = _finding(SHM.format(h="node7", p=4242, t=4250, x="aZ3", n=1024), host="node7", pid=4242)
    b = _finding(SHM.format(h="gpu-b12", p=91, t=97, x="Qq9", n=7), host="gpu-b12", pid=91)
    fa = fingerprint("shm", "shm.nccl_shm", a, {"node7"})
    assert fa == fingerprint("shm", "shm.nccl_shm", b, {"gpu-b12"})
    assert len(fa) == 16 and int(fa, 16) >= 0


def test_two_categories_never_share_a_fingerprint() -> None:
    f = _finding("RuntimeError: something failed")
    assert fingerprint("shm", "shm.nccl_shm", f) != fingerprint("storage", "shm.nccl_shm", f)
    assert fingerprint("unknown", None, None) != fingerprint("none", None, None)


def test_key_fields_separate_faults_of_one_signature() -> None:
    x79 = _finding("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.", kind=EventKind.XID, xid=79)
    x48 = _finding("NVRM: Xid (PCI:0000:3b:00): 48, pid=1234, GPU has fallen off the bus.", kind=EventKind.XID, xid=48)
    assert fingerprint("hardware_xid", None, x79) != fingerprint("hardware_xid", None, x48)


def test_core_uses_the_crash_signature_not_addresses() -> None:
    a = _finding("SIGSEGV at 0x7f00dead0000", kind=EventKind.CORE, fingerprint="abc123", signal="SIGSEGV")
    b = _finding("SIGSEGV at 0x5555beef0000 in /tmp/other/path", kind=EventKind.CORE, fingerprint="abc123", signal="SIGSEGV")
    c = _finding("SIGSEGV at 0x7f00dead0000", kind=EventKind.CORE, fingerprint="ffff00", signal="SIGSEGV")
    assert fingerprint("user_code", None, a) == fingerprint("user_code", None, b) != fingerprint("user_code", None, c)


def test_mask_line_hides_volatile_parts() -> None:
    a = mask_line(
        "ib0 10.0.0.7:5050 GPU-1b2c3d4e-aaaa-bbbb-cccc-0123456789ab busId 3b000 on node7 at /data/run7/x.bin", {"node7"}
    )
    b = mask_line(
        "ib0 10.0.9.1:6000 GPU-99999999-aaaa-bbbb-cccc-ffffffffffff busId 1a000 on node12 at /scratch/r/y.bin", {"node12"}
    )
    assert a == b and "node" not in a


def test_analyze_and_help_load_no_triage_libraries() -> None:
    heavy = ("pandas", "sqlalchemy", "alembic", "drain3", "distributed", "dask", "pyarrow", "numpy")
    code = (
        "import sys; from pathlib import Path; from click.testing import CliRunner; from analyzer.cli import main; "
        "assert CliRunner().invoke(main, ['--help']).exit_code == 0; "
        "r = CliRunner().invoke(main, ['analyze', 'examples/oom-cascade', '--format', 'json']); assert r.exit_code == 0; "
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.strip() == "[]"
