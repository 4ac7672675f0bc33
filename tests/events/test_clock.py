from __future__ import annotations

from analyzer.events.clock import format_time, parse_time


def test_iso_and_python_logging() -> None:
    t, approx = parse_time("2024-05-01 12:34:56,500")
    assert format_time(t) == "2024-05-01T12:34:56.500Z" and not approx
    t2, _ = parse_time("2024-05-01T14:34:56+02:00")
    assert t2 == t - 0.5


def test_torchelastic_and_dmesg_t() -> None:
    assert parse_time("2023-05-10_12:00:01")[0] == parse_time("2023-05-10 12:00:01")[0]
    assert format_time(parse_time("Wed May  1 12:34:56 2024")[0]) == "2024-05-01T12:34:56.000Z"


def test_yearless_formats_take_the_run_year() -> None:
    t, approx = parse_time("May  1 12:34:56", 2024)
    assert format_time(t) == "2024-05-01T12:34:56.000Z" and not approx
    _, approx = parse_time("May  1 12:34:56")
    assert approx
    t, _ = parse_time("E626 06:24:44.9", 2024)
    assert format_time(t) == "2024-06-26T06:24:44.900Z"
    t, approx = parse_time("05-29 16:44:33", 2025)  # vLLM's logger
    assert format_time(t) == "2025-05-29T16:44:33.000Z" and not approx
    assert parse_time("05-29 16:44:33")[1]


def test_uptime_stays_relative() -> None:
    assert parse_time("1234.5678") == (None, True)
