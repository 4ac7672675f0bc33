from __future__ import annotations

from pathlib import Path

from analyzer.events.clock import format_time
from analyzer.pipeline import collect

KERN = (
    "May 15 23:09:30 node3 kernel: [  518.050606] Out of memory: Killed process 15784 (python3) total-vm:11964kB, "
    "anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB\n"
    "[  520.050606] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
)


def test_uptime_lines_are_anchored_to_the_wall_clock_of_their_log(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "kern.log").write_text(KERN)
    (run / "train.log").write_text("2024-05-15 23:09:00,000 - INFO - step 10 loss 1.0 error rate 0.1\n")
    a = collect(run)
    xid = next(e for e in a.events if e.kind == "xid")
    assert format_time(xid.time) == "2024-05-15T23:09:32.000Z"
    assert "anchored" in xid.fields["time_from"]


def test_a_run_without_any_year_takes_the_year_its_files_were_written(tmp_path: Path) -> None:
    import json
    import os
    from datetime import UTC, datetime

    from analyzer.pipeline import analyze
    from analyzer.report.json_report import render_json

    run = tmp_path / "run"
    run.mkdir()
    log = run / "syslog"
    log.write_text("Dec  3 13:07:04 gpu01 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n")
    written = datetime(2025, 3, 1, tzinfo=UTC).timestamp()  # December comes after March: the year before
    os.utime(log, (written, written))
    report = analyze(run)
    ff = report.verdict.first_failure
    assert format_time(ff.time) == "2024-12-03T13:07:04.000Z" and ff.time_approx
    assert ff.time_note == "no year in the logs: the year the files were last written"
    assert "(None)" not in report.verdict.explanation  # the Xid line names no process
    data = json.loads(render_json(report))["verdict"]["first_failure"]
    assert (data["time"], data["time_note"]) == ("2024-12-03T13:07:04.000Z", ff.time_note)
    written = datetime(2025, 12, 20, tzinfo=UTC).timestamp()
    os.utime(log, (written, written))
    assert format_time(analyze(run).verdict.first_failure.time) == "2025-12-03T13:07:04.000Z"
