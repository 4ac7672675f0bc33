"""Kernel log grammar: real lines from public reports (tests/fixtures/parse/dmesg/*.source) and
satyr's kernel oops corpus (tests/fixtures/external/satyr/kerneloopses)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import EventKind
from analyzer.parse.base import Region
from analyzer.parse.dmesg import TRIGGERS, parse_lines, parse_region, parse_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parse" / "dmesg"


def _events(name: str):
    return parse_lines((FIXTURES / name).read_text(encoding="utf-8").splitlines(), name)[0]


def _at(events, line: int):
    return next(e for e in events if e.loc.line == line)


def test_xid_with_pid_name_channel() -> None:
    ev = _at(_events("xid.log"), 3)
    assert ev.kind == EventKind.XID
    assert ev.fields["xid"] == 31 and ev.fields["pci"] == "0000:01:00"
    assert ev.pid == 14292 and ev.fields["process"] == "python" and ev.fields["channel"] == "00000030"
    assert ev.fields["uptime"] == pytest.approx(22859.081860)
    assert ev.time_text == "22859.081860"
    assert ev.fields["xid_message"].startswith("intr 00000000. MMU Fault: ENGINE HOST0")


def test_xid_variants() -> None:
    events = _events("xid.log")
    no_name = _at(events, 5)
    assert (no_name.fields["xid"], no_name.pid, no_name.fields.get("process")) == (31, 33750, None)
    unknown = _at(events, 6)
    assert unknown.fields["xid"] == 62 and unknown.pid is None and unknown.fields["process"] is None
    follow_up = _at(events, 8)
    assert follow_up.fields["xid"] == 45 and follow_up.fields["pci"] == "0000:dc:00"
    assert follow_up.fields["xid_message"] == "caused by previous Xid 149"
    fallen = _at(events, 9)
    assert fallen.fields["xid"] == 79 and fallen.fields["pci"] == "0000:06:00"
    assert fallen.fields["xid_message"] == "GPU has fallen off the bus."
    old = _at(events, 11)  # syslog + uptime, driver without "PCI:"
    assert (old.fields["xid"], old.fields["pci"], old.host) == (31, "0000:01:00", "hostname")
    assert old.time_text == "Nov 22 18:29:55" and old.fields["uptime"] == pytest.approx(966.503025)
    ctime = _at(events, 12)
    assert ctime.fields["channel"] == "00000002" and ctime.time_text == "Wed Jun 24 15:44:42 2026"
    assert _at(events, 13).fields["xid"] == 154


def test_xid_of_a_mig_instance() -> None:
    # kern_gpu_error_cont_ga100.c: the MIG GPU instance follows the bus id inside the parentheses
    lines = [
        "[ 1843.308145] NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No",
        "[ 1843.308146] NVRM: Xid (PCI:0000:01:00): 95, pid=7062, Uncontained: LTC TAG (0x2, 0x1). RST: Yes, D-RST: No",
    ]
    mig, whole = parse_lines(lines, "kern.log")[0]
    assert mig.kind == EventKind.XID and whole.kind == EventKind.XID
    assert (mig.fields["xid"], mig.fields["pci"], mig.pid) == (94, "0000:01:00", 7194)
    assert mig.fields["xid_message"] == "Contained: CE User Channel (0x9). RST: No, D-RST: No"
    assert (whole.fields["xid"], whole.fields["pci"], whole.pid) == (95, "0000:01:00", 7062)


def test_nvrm_gpu_lines_and_segfault() -> None:
    events = _events("xid.log")
    gpu = _at(events, 1)
    assert gpu.kind == EventKind.KERNEL and gpu.fields["record"] == "nvrm_gpu"
    assert gpu.fields["gpu_uuid"] == "GPU-af4f89ae-d08b-1b53-9938-c9ed209a3513" and gpu.fields["pci"] == "0000:01:00"
    lost = _at(events, 10)
    assert lost.fields["pci"] == "0000:06:00" and lost.fields["gpu_message"] == "GPU has fallen off the bus."
    seg = _at(events, 4)
    assert seg.fields["record"] == "segfault" and seg.pid == 33417 and seg.fields["process"] == "test1"
    assert seg.fields["segfault_library"] == "test1" and seg.fields["error_code"] == 4
    assert _at(events, 2).fields["record"] == "plain"


def test_memcg_oom_kill_and_truncated_report() -> None:
    events = _events("oom_memcg.log")
    kill = _at(events, 1)
    assert kill.kind == EventKind.OOM_KILL
    assert kill.pid == 63214 and kill.fields["killed_pid"] == 63214 and kill.fields["process"] == "uwsgi"
    assert kill.fields["constraint"] == "memcg" and kill.fields["anon_rss_kb"] == 164992
    report = _at(events, 3)  # invoked oom-killer ... call trace, cut before its kill line
    assert report.kind == EventKind.OOM_KILL and report.fields["invoked_by"] == "uwsgi"
    assert report.fields.get("killed_pid") is None
    assert [e.loc.line for e in events if e.kind == EventKind.OOM_KILL] == [1, 3]


def test_global_oom_kill_forms() -> None:
    events = _events("oom_global.log")
    block = _at(events, 1)  # oom-kill: line and its Killed line are one record
    assert block.kind == EventKind.OOM_KILL and block.end_line == 2
    assert block.fields["killed_pid"] == 7899 and block.fields["constraint"] == "global"
    assert block.fields["task_memcg"] == "/init.scope" and block.fields["anon_rss_kb"] == 15370088
    syslog = _at(events, 3)
    assert (syslog.fields["killed_pid"], syslog.host, syslog.time_text) == (
        15784,
        "ubuntu-s-1vcpu-2gb-ams3-01",
        "May 15 23:09:30",
    )
    assert _at(events, 5).fields["process"] == "(resolved)"
    old = _at(events, 6)
    assert old.kind == EventKind.OOM_KILL and old.fields["killed_pid"] == 935 and "constraint" not in old.fields
    assert old.fields["anon_rss_kb"] == 102104


def test_pcie_aer() -> None:
    events = _events("aer.log")
    first = _at(events, 1)
    assert first.fields["aer_severity"] == "fatal" and first.fields["pci"] == "0000:00:03"
    assert first.time_text == "+0.000001" and "uptime" not in first.fields
    assert _at(events, 2).fields["aer_type"] == "Transaction Layer"
    status = _at(events, 3)
    assert (status.fields["aer_status"], status.fields["aer_mask"]) == ("00004020", "00000000")
    assert _at(events, 5).fields["aer_error"] == "CmpltTO"
    assert _at(events, 6).fields["aer_reporter"] == "0000:03:00"
    non_fatal = _at(events, 7)
    assert non_fatal.fields["aer_severity"] == "non_fatal" and non_fatal.host == "pve"
    corrected = _at(events, 8)
    assert corrected.fields["aer_severity"] == "corrected" and corrected.fields["pci"] == "0000:07:00"


def test_parse_region_returns_the_record_at_its_first_line() -> None:
    lines = tuple((FIXTURES / "oom_global.log").read_text(encoding="utf-8").splitlines())
    events = parse_region(Region("kern.log", 10, lines[:2], "dmesg", source_rank=None, source_host="node7"))
    assert len(events) == 1
    ev = events[0]
    assert ev.kind == EventKind.OOM_KILL and ev.loc.line == 10 and ev.end_line == 11
    assert ev.host == "node7"
    assert parse_region(Region("kern.log", 1, (), "dmesg")) == []


def test_triggers_compile_and_match_their_records() -> None:
    import re

    text = (FIXTURES / "xid.log").read_text(encoding="utf-8") + (FIXTURES / "oom_memcg.log").read_text("utf-8")
    compiled = [re.compile(t.pattern) for t in TRIGGERS]
    hits = [line for line in text.splitlines() if any(rx.search(line) for rx in compiled)]
    assert any("Xid (PCI:0000:01:00): 31" in h for h in hits)
    assert any("invoked oom-killer" in h for h in hits)
    assert not any("GPU Board Serial Number" in h for h in hits)


@pytest.mark.parametrize(
    "line",
    [
        "[ 5001.123456] WARNING: CPU: 3 PID: 4242 at drivers/gpu/drm/drm_gem.c:1021 drm_gem_object_free+0x23/0x30",
        "[ 5001.123456] WARNING: drivers/pci/msi/msi.c:888 at __pci_enable_msi_range+0x1f/0x40, CPU#3: python/4242",
        "[110417.280426] WARNING: at mm/page_alloc.c:2204 __alloc_pages_nodemask+0x231/0x8f0()",
        "WARNING: possible circular locking dependency detected",
        "[   12.345678] WARNING: suspicious RCU usage",
    ],
)
def test_kernel_warning_headers_start_an_oops(line: str) -> None:
    import re

    assert any(re.search(t.pattern, line) for t in TRIGGERS)
    assert parse_text(line)["oopses"], line


@pytest.mark.parametrize(
    "line",
    [
        # Open MPI's help texts (help-mpi-btl-openib.txt, help-mpi-btl-tcp.txt), printed by healthy jobs too
        "WARNING: There was an error initializing an OpenFabrics device.",
        "WARNING: There is at least non-excluded one OpenFabrics device found,",
        "WARNING: Open MPI failed to TCP connect to a peer MPI process.  This",
        "WARNING: at least one process is still running",
    ],
)
def test_program_warnings_are_not_kernel_warnings(line: str) -> None:
    import re

    assert not any(re.search(t.pattern, line) for t in TRIGGERS if "WARNING" in t.pattern)
    assert parse_text(line)["oopses"] == []


@pytest.fixture
def kerneloopses(external: Path) -> Path:
    return external / "satyr" / "kerneloopses"


def test_every_satyr_oops_parses_as_an_oops(kerneloopses: Path) -> None:
    files = sorted(kerneloopses.iterdir())
    assert len(files) > 40
    for path in files:
        result = parse_text(path.read_text(encoding="utf-8", errors="replace"))
        assert result["oopses"], f"{path.name}: no oops record"
        assert all(o["title"] for o in result["oopses"]), path.name


def test_satyr_expected_figures(kerneloopses: Path) -> None:
    result = parse_text((kerneloopses / "rhbz-827868").read_text(encoding="utf-8"))
    (oops,) = result["oopses"]
    assert len(oops["frames"]) == 32
    assert len(oops["modules"]) == 119
    assert oops["kind"] == "warning" and oops["pid"] == 3 and oops["process"] == "ksoftirqd/0"
    first = oops["frames"][0]
    assert (first["function"], first["offset"], first["reliable"]) == ("warn_slowpath_common", "+0x7f/0xc0", True)
    unreliable = [f for f in oops["frames"] if not f["reliable"]]
    assert unreliable[0]["function"] == "ip_copy_metadata"
    assert next(f for f in oops["frames"] if f["function"] == "pppol2tp_xmit")["module"] == "l2tp_ppp"
    assert oops["modules"][0] == "vfat" and oops["modules"][-1] == "video"
    (event,) = [e for e in result["events"] if e["kind"] == "oops"]
    assert event["uptime"] == pytest.approx(110417.280426) and event["oops_kind"] == "warning"


def test_satyr_other_architectures(kerneloopses: Path) -> None:
    ppc = parse_text((kerneloopses / "rhbz-1040900-ppc64-1").read_text(encoding="utf-8"))["oopses"][0]
    assert ppc["frames"][0]["function"] == ".eeh_dev_check_failure" and not ppc["frames"][0]["reliable"]
    s390 = parse_text((kerneloopses / "rhbz-1040900-s390x-1").read_text(encoding="utf-8"))["oopses"][0]
    assert s390["frames"][0]["module"] == "will_oops" and len(s390["frames"]) == 6
    arm = parse_text((kerneloopses / "arm-hung-task-oops").read_text(encoding="utf-8"))["oopses"][0]
    assert arm["kind"] == "panic" and arm["frames"][0]["function"] == "dump_backtrace_log_lvl"
    new_style = parse_text((kerneloopses / "rhbz-1518943").read_text(encoding="utf-8"))["oopses"][0]
    assert new_style["frames"][0]["function"] == "amdgpu_vm_sdma_update"
    assert new_style["frames"][1]["reliable"] is False


@pytest.mark.parametrize(
    "line",
    [
        "",
        "\x00\x01\x02\xff\xfe binary",
        "[ 12.3] NVRM: Xid (PCI:zzzz): seventy-nine",
        "[ 12.3] NVRM: Xid (PCI:0000:3b:00): ",
        "python invoked oom-killer:",
        "Killed process x (y)",
        "[<ffffffff>]",
        "Modules linked in:",
        "pcieport 0000:00:01.0: AER:",
        "traps: python[12] ",
        "[Wed May  1 12:34:56 2024]",
        "\ufffd" * 100,
        "[" * 5000,
        "x" * (1 << 20),
        "NVRM: Xid (PCI:0000:3b:00): 79, " + "pid=" * 200_000,
    ],
)
def test_garbage_never_raises(line: str) -> None:
    result = parse_text(line)
    assert len(result["events"]) == (1 if line else 0)
    events = parse_region(Region("f", 1, (line,), "dmesg"))
    assert len(events) == 1
