"""torchrun / torch.distributed.elastic and DeepSpeed launcher output, and error.json files.

The ChildFailedError report is cut out of the log by lines and parsed with the `summary` rule
of grammars/torchelastic.lark; single launcher lines with its `record` rule.
"""

from __future__ import annotations

import json
import re
import signal as _signal
from typing import Any

from lark import Token, Transformer
from lark.exceptions import LarkError

from analyzer.model import Event, EventKind, Location, SourceKind
from analyzer.parse._lark import load_parser
from analyzer.parse.base import GrammarParser, Region, Trigger, event_data, region_events, unparsed
from analyzer.parse.prefix import split_prefix
from analyzer.sources import safe_json

TRIGGERS = (
    Trigger(r"^(?:\S+\s)?\s*(?:Root Cause \(first observed failure\):|Failures:)\s*$", block=80),
    Trigger(r"failed \(exitcode: -?\d+\) local_rank: \d+"),
    Trigger(r"Signal \d+ \(SIG[A-Z0-9]+\) received by PID \d+", ignore_case=True),
    Trigger(r"\S\s*exitcode\s*:\s*-?\d+\s*\(pid:\s*\d+\)"),  # a summary row flattened onto one line
    Trigger(r"exits with return code = -?\d+"),
    Trigger(r"process \d+ terminated with (?:signal SIG[A-Z0-9]+|exit code -?\d+)"),
    Trigger(r"Sending process \d+ closing signal SIG[A-Z0-9]+"),
    Trigger(r"died with <Signals\.SIG[A-Z0-9]+: \d+>"),
)

_RECORD_START = re.compile(
    r"failed \(exitcode:|[Ss]ignal \d+ \(SIG|exits with return code|process \d+ terminated with|"
    r"Sending process \d+ closing signal|died with <Signals\.|exitcode\s*:\s*-?\d+\s*\(pid:"
)
_LOCAL_RANK_ARG = re.compile(r"['\"]--local[_-]rank[= ](\d+)['\"]")
_SECTION = re.compile(r"^(Root Cause \(first observed failure\):|Failures:)\s*$")
_LINE_OF_SUMMARY = re.compile(
    r"^(?:[=\-]{10,}|\[\d+\]:|\s+(?:time|host|rank|local_rank|exitcode|error_file|traceback)\s*:.*|"
    r"Failures:|Root Cause \(first observed failure\):|\s*<NO_OTHER_FAILURES>|\s*)$"
)


def signal_name(number: int) -> str | None:
    try:
        return _signal.Signals(number).name
    except ValueError:
        return None


class _Summary(Transformer[Token, Any]):
    def summary(self, items: list[Any]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for item in items:
            if isinstance(item, tuple):
                section, entries = item
                for e in entries:
                    e["root_cause"] = section == "root"
                    rows.append(e)
        return rows

    def failures(self, items: list[Any]) -> tuple[str, list[dict[str, Any]]]:
        return "failures", [i for i in items if isinstance(i, dict)]

    def root(self, items: list[Any]) -> tuple[str, list[dict[str, Any]]]:
        return "root", [i for i in items if isinstance(i, dict)]

    def entry(self, items: list[Any]) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for item in items:
            if isinstance(item, tuple):
                row[item[0]] = item[1]
        return _normalize_row(row)

    def field(self, items: list[Token]) -> tuple[str, str]:
        return str(items[0]), str(items[1]).strip()


def _normalize_row(row: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"time": row.get("time"), "host": row.get("host")}
    m = re.match(r"(-?\d+|N/A)?\s*(?:\(local_rank:\s*(\d+)\))?", row.get("rank", ""))
    if m:
        out["rank"] = int(m.group(1)) if m.group(1) and m.group(1) != "N/A" else None
        out["local_rank"] = int(m.group(2)) if m.group(2) else None
    m = re.match(r"(-?\d+)\s*(?:\(pid:\s*(\d+)\))?", row.get("exitcode", ""))
    if m:
        out["exitcode"] = int(m.group(1))
        out["pid"] = int(m.group(2)) if m.group(2) else None
        code = out["exitcode"]
        out["signal"] = signal_name(-code) if code < 0 else None
    error_file = row.get("error_file")
    out["error_file"] = None if error_file in (None, "<N/A>") else error_file
    out["traceback"] = row.get("traceback")
    return out


class _Record(Transformer[Token, dict[str, Any]]):
    def record(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        return items[0]

    def failed_exitcode(self, items: list[Token]) -> dict[str, Any]:
        code = int(items[0])
        return {
            "record": "failed_exitcode",
            "exitcode": code,
            "local_rank": int(items[1]),
            "pid": int(items[2]),
            "signal": signal_name(-code) if code < 0 else None,
        }

    def signal_received(self, items: list[Token]) -> dict[str, Any]:
        return {
            "record": "signal_received",
            "signal_number": int(items[0]),
            "signal": str(items[1]),
            "pid": int(items[2]),
            "exitcode": -int(items[0]),
        }

    def return_code(self, items: list[Token]) -> dict[str, Any]:
        code = int(items[0])
        return {"record": "return_code", "exitcode": code, "signal": signal_name(-code) if code < 0 else None}

    def terminated_signal(self, items: list[Token]) -> dict[str, Any]:
        return {"record": "terminated_signal", "process": int(items[0]), "signal": str(items[1])}

    def terminated_code(self, items: list[Token]) -> dict[str, Any]:
        return {"record": "terminated_code", "process": int(items[0]), "exitcode": int(items[1])}

    def closing_signal(self, items: list[Token]) -> dict[str, Any]:
        return {"record": "closing_signal", "pid": int(items[0]), "signal": str(items[1]), "teardown": True}

    def exitcode_pid(self, items: list[Token]) -> dict[str, Any]:
        code = int(items[0])
        return {
            "record": "exitcode_pid",
            "exitcode": code,
            "pid": int(items[1]),
            "signal": signal_name(-code) if code < 0 else None,
        }

    def died_with(self, items: list[Token]) -> dict[str, Any]:
        return {"record": "died_with", "signal": str(items[0]), "exitcode": -int(items[1])}


def parse_summary(lines: list[str]) -> list[dict[str, Any]] | None:
    text = "\n".join(lines) + "\n"
    try:
        tree = load_parser("torchelastic", start="summary").parse(text)
    except LarkError:
        return None
    result: list[dict[str, Any]] = _Summary().transform(tree)
    return result


def parse_record(text: str) -> dict[str, Any] | None:
    m = _RECORD_START.search(text)
    if not m:
        return None
    try:
        tree = load_parser("torchelastic", start="record").parse(text[m.start() :].strip())
    except LarkError:
        # the record may be followed by more text on the line: retry on its shortest prefix
        rest = text[m.start() :]
        for end in range(len(rest), 0, -1):
            if rest[end - 1] in ")>.0123456789 " and end < len(rest):
                try:
                    tree = load_parser("torchelastic", start="record").parse(rest[:end].strip())
                    break
                except LarkError:
                    continue
        else:
            return None
    result: dict[str, Any] = _Record().transform(tree)
    return result


def parse_region(region: Region) -> list[Event]:
    first = split_prefix(region.lines[0])
    if _SECTION.match(first.message.strip()) and len(region.lines) > 1:
        return _summary_events(region)
    record = parse_record(first.message)
    if record is None:
        return [unparsed(region, 0, "launcher line not understood")]
    if record.get("record") == "return_code" and "local_rank" not in record:
        # DeepSpeed's launcher quotes the child's command line, which carries its --local_rank
        given = _LOCAL_RANK_ARG.search(first.message)
        if given:
            record["local_rank"] = int(given.group(1))
    kind = EventKind.SIGNAL if record.get("signal") else EventKind.LAUNCHER_EXIT
    # mp.spawn's "process N terminated" counts processes from 0: N is the rank it was given
    rank = first.rank if first.rank is not None else record.get("local_rank", record.get("process", region.source_rank))
    return [
        Event(
            kind=kind,
            loc=Location(region.file, region.start),
            text=region.lines[0],
            message=first.message.strip(),
            rank=rank if isinstance(rank, int) else None,
            host=first.host or region.source_host,
            pid=record.get("pid"),
            time_text=first.time_text,
            fields=record,
        )
    ]


def _summary_events(region: Region) -> list[Event]:
    # the report is the run of summary-shaped lines around the section header
    lines = [split_prefix(line).message for line in region.lines]
    end = 0
    for i, line in enumerate(lines):
        if i and not _LINE_OF_SUMMARY.match(line) and not line.strip().startswith(("Signal ", "To enable")):
            break
        end = i
    body = lines[: end + 1]
    rows = parse_summary(["-" * 20, *body])
    if rows is None:
        return [unparsed(region, 0, "torchelastic summary not understood")]
    events = []
    for row in rows:
        line_no = region.start
        if row.get("pid") is not None:
            for i, line in enumerate(body):
                if f"(pid: {row['pid']})" in line:
                    line_no = region.line_no(i)
                    break
        sig = row.get("signal")
        msg = f"rank {row.get('rank')} exited with code {row.get('exitcode')}" + (f" ({sig})" if sig else "")
        if row.get("traceback"):
            msg += f": {row['traceback']}"
        events.append(
            Event(
                kind=EventKind.ELASTIC_FAILURE,
                loc=Location(region.file, line_no),
                text=region.lines[0],
                message=msg,
                rank=row.get("rank"),
                host=row.get("host") or region.source_host,
                pid=row.get("pid"),
                time_text=row.get("time"),
                fields=row,
            )
        )
    return events


# seconds since the epoch that a job can have written: 1990 .. 2200
_MIN_TS, _MAX_TS = 631152000, 7258118400


def _timestamp(value: object) -> float | None:
    """torchelastic's timestamp (an int, or a string of ASCII digits); None for anything else or
    a value no clock gives (huge, negative)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.strip()
        if not (value.isascii() and value.isdigit()) or len(value) > 12:
            return None
        value = int(value)
    if isinstance(value, int | float) and _MIN_TS <= value <= _MAX_TS:
        return float(value)
    return None


def parse_error_json(text: str, file: str, rank: int | None, host: str | None) -> list[Event]:
    """A torchelastic error.json (`@record`): the message and the Python call stack. Parsed
    within bounds (size, depth) and type-checked: a field of an unexpected type is ignored."""
    try:
        data = safe_json.loads(text)
    except ValueError as exc:
        why = "invalid JSON in error file" if not isinstance(exc, safe_json.JSONLimit) else f"error file not parsed: {exc}"
        return [Event(kind=EventKind.UNPARSED, loc=Location(file, 1), text=text[:200], message=why)]
    message = data.get("message", data) if isinstance(data, dict) else data
    extra: dict[str, Any] = {}
    if isinstance(message, dict):
        raw_extra = message.get("extraInfo")
        extra = raw_extra if isinstance(raw_extra, dict) else {}
        message = message.get("message", "")
    text_msg = message if isinstance(message, str) else json.dumps(message)[:4096]
    last = text_msg.strip().splitlines()[-1] if text_msg.strip() else ""
    callstack = extra.get("py_callstack")
    fields: dict[str, Any] = {
        "py_callstack": callstack if isinstance(callstack, str) else None,
        "timestamp": extra.get("timestamp") if isinstance(extra.get("timestamp"), str | int) else None,
        "error_json": True,
    }
    m = re.match(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$", last)
    if m:
        fields["exception_type"] = m.group(1)
        fields["exception_message"] = m.group(2) or ""
    return [
        Event(
            kind=EventKind.TRACEBACK if m else EventKind.LINE,
            loc=Location(file, 1),
            text=last,
            message=last,
            rank=rank,
            host=host,
            time=_timestamp(extra.get("timestamp")),
            fields=fields,
        )
    ]


def _dump(text: str, file: str) -> dict[str, Any]:
    """An error.json as its events; a log as the events of its launcher lines and summaries."""
    if text.lstrip().startswith("{"):
        return {"events": [event_data(e) for e in parse_error_json(text, file, None, None)]}
    return {"events": [event_data(e) for e in region_events(PARSER, text, file)]}


def _whole_file(text: str, file: str, rank: int | None, host: str | None) -> tuple[list[Event], str | None]:
    events = parse_error_json(text, file, rank, host)
    return events, "invalid JSON" if any(e.kind == EventKind.UNPARSED for e in events) else None


PARSER = GrammarParser("torchelastic", (SourceKind.ELASTIC_ERROR,), tuple(TRIGGERS), parse_region, _dump, _whole_file)
