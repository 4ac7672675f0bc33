"""The one serializer of model objects to JSON-ready data (`postmortem parse`, `postmortem core`):
events, frames, threads and backtraces. Keys are stable; the report has its own JSON contract
(analyzer/report/json_report.py)."""

from __future__ import annotations

from typing import Any

from analyzer.model import Backtrace, Event, Frame, Thread

NATIVE_FRAME_KEYS = ("index", "address", "function", "file", "line", "library")
PYTHON_FRAME_KEYS = ("file", "line", "function")


def frame_data(f: Frame, keys: tuple[str, ...] = NATIVE_FRAME_KEYS) -> dict[str, Any]:
    return {k: getattr(f, k) for k in keys}


def thread_data(t: Thread) -> dict[str, Any]:
    return {"number": t.number, "lwp": t.lwp, "frames": [frame_data(f) for f in t.frames]}


def backtrace_data(bt: Backtrace) -> dict[str, Any]:
    return {"signal": bt.signal, "threads": [thread_data(t) for t in bt.threads], "crash_thread": bt.crash_thread}


def event_head(e: Event) -> dict[str, Any]:
    """What every serialized event starts with: its kind, where, who, when and its message."""
    return {
        "kind": str(e.kind),
        "line": e.loc.line,
        "time": e.time_text,
        "host": e.host,
        "rank": e.rank,
        "pid": e.pid,
        "message": e.message,
    }


def event_data(e: Event) -> dict[str, Any]:
    """An event: where, who, when, and its plain-data fields."""
    d = event_head(e)
    for k, v in e.fields.items():
        if k not in d and isinstance(v, str | int | float | bool | list | dict | type(None)):
            d[k] = v
    return d
