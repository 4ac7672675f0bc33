"""Clock formats found in logs, turned into seconds since the epoch (UTC).

Formats without a year (syslog, glog, vLLM's) take the year of the run (the most common full date
seen in it); without any, the time is marked approximate (normalize then takes the year the
files were last written). dmesg uptime stamps stay relative
until a wall-clock anchor is known (see `anchor_uptime`).
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime

_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}

_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T_](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}:?\d{2})?$")
_DMESG_T = re.compile(r"^[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})$")
_SYSLOG = re.compile(r"^([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2})$")
_GLOG = re.compile(r"^[IWEF](\d{1,2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?$")
# vLLM's logger: 05-29 16:44:33 (month-day, no year)
_MONTH_DAY = re.compile(r"^(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?$")
_UPTIME = re.compile(r"^\d+\.\d+$")


def _frac(text: str | None) -> float:
    return float("0." + text) if text else 0.0


def _ts(y: int, mo: int, d: int, h: int, mi: int, s: int, frac: float = 0.0, offset_s: int = 0) -> float | None:
    try:
        return datetime(y, mo, d, h, mi, s, tzinfo=UTC).timestamp() + frac - offset_s
    except ValueError:
        return None


def parse_time(text: str | None, year: int | None = None) -> tuple[float | None, bool]:
    """(epoch seconds or None, approximate?) for one time text."""
    if not text:
        return None, False
    text = text.strip().strip("[]")
    m = _ISO.match(text)
    if m:
        offset = 0
        tz = m.group(8)
        if tz and tz != "Z":
            sign = 1 if tz[0] == "+" else -1
            digits = tz[1:].replace(":", "")
            offset = sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)
        y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
        return _ts(y, mo, d, h, mi, s, _frac(m.group(7)), offset), False
    m = _DMESG_T.match(text)
    if m:
        return _ts(
            int(m.group(6)), _MONTHS.get(m.group(1), 1), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5))
        ), False
    m = _SYSLOG.match(text)
    if m:
        return _ts(
            year or 1970, _MONTHS.get(m.group(1), 1), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5))
        ), year is None
    m = _GLOG.match(text) or _MONTH_DAY.match(text)
    if m:
        return _ts(
            year or 1970, int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)), _frac(m.group(6))
        ), year is None
    if _UPTIME.match(text):
        return None, True
    return None, False


def year_of(text: str | None) -> int | None:
    if not text:
        return None
    m = re.match(r"^\[?(\d{4})-\d{2}-\d{2}", text.strip())
    if m:
        return int(m.group(1))
    m = _DMESG_T.match(text.strip().strip("[]"))
    return int(m.group(6)) if m else None


def format_time(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
