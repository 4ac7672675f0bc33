from __future__ import annotations

from analyzer.parse.base import Region
from analyzer.parse.torchelastic import parse_error_json, parse_record, parse_region

SUMMARY = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2023-05-10_12:00:01
  host      : node1
  rank      : 1 (local_rank: 1)
  exitcode  : -7 (pid: 12346)
  error_file: <N/A>
  traceback : Signal 7 (SIGBUS) received by PID 12346
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2023-05-10_12:00:00
  host      : node1
  rank      : 0 (local_rank: 0)
  exitcode  : -9 (pid: 12345)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 12345
============================================================
"""


def test_summary_rows() -> None:
    lines = SUMMARY.splitlines()
    start = lines.index("Failures:")
    events = parse_region(Region("launcher.log", start + 1, tuple(lines[start:]), "torchelastic"))
    rows = {e.rank: e for e in events}
    assert set(rows) == {0, 1}
    assert rows[0].fields["root_cause"] is True and rows[0].fields["signal"] == "SIGKILL"
    assert rows[1].fields["exitcode"] == -7 and rows[1].pid == 12346 and rows[1].host == "node1"
    assert rows[0].loc.line == lines.index("  exitcode  : -9 (pid: 12345)") + 1


def test_launcher_records() -> None:
    r = parse_record(
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: 0 (pid: 123) of binary: /usr/bin/python3"
    )
    assert r == {"record": "failed_exitcode", "exitcode": -7, "local_rank": 0, "pid": 123, "signal": "SIGBUS"}
    r = parse_record(
        "[2023-06-01 10:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py'] exits with return code = -9"
    )
    assert r is not None and r["exitcode"] == -9 and r["signal"] == "SIGKILL"
    r = parse_record("subprocess.CalledProcessError: Command '['/usr/bin/python', '-u']' died with <Signals.SIGKILL: 9>.")
    assert r is not None and r["signal"] == "SIGKILL"
    r = parse_record("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 1234 closing signal SIGTERM")
    assert r is not None and r["teardown"] is True
    assert parse_record("nothing to see here") is None


def test_error_json() -> None:
    text = '{"message": {"message": "RuntimeError: CUDA error: out of memory", "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "1683720000"}}}'
    (ev,) = parse_error_json(text, "attempt_0/2/error.json", 2, None)
    assert ev.fields["exception_type"] == "RuntimeError"
    assert ev.rank == 2 and ev.time == 1683720000.0
    (bad,) = parse_error_json("{not json", "error.json", None, None)
    assert bad.kind == "unparsed"
