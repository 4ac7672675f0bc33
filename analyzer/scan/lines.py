"""Lines as terminals show them: what the scan matches is the text a person would read.

A log written through a terminal carries more than its messages: ANSI colour and cursor codes
(`ESC[31m`), progress bars that redraw themselves with carriage returns (tqdm writes
`\\r 10%|#   | 1/10 ...\\r 20%|##  | ...` on one physical line), and messages glued after the last
redraw when a process dies mid-bar (`100%|####| 10/10 [00:01<00:00]Killed`). `terminal_view`
gives the text with colour codes removed and every redraw on a line of its own, plus where those
extra line breaks are, so line numbers stay those of the file.
"""

from __future__ import annotations

import re
from bisect import bisect_left

_ANSI = re.compile(rb"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# a carriage return that redraws the line (not the CR of a CRLF ending)
_REDRAW = re.compile(rb"\r(?![\r\n])")
# the end of a progress bar with text glued right after it: tqdm's `NN%|bar|` with no counts
# after it, or its `[elapsed<remaining, rate]` block; the closing `|` or `]` becomes the break
# (each searched from its literal, `%|` or `<`, which the regex engine finds fast; what must come
# before the literal, the percentage's digits or the `[00:01` of the time block, is checked after)
_GLUED_BAR = re.compile(rb"%\|[^|\n\r]{0,200}(\|)(?= ?[A-Za-z])")
_GLUED_TIME = re.compile(rb"<[^\]\n\r]{0,200}(\])(?= ?[A-Za-z])")
_TIME_HEAD = re.compile(rb"\[\d+:\d\d(?::\d\d)?$")
_DIGITS = frozenset(b"0123456789")


def _glued(chunk: bytes) -> list[int]:
    """Offsets of the `|` or `]` that ends a progress bar with a message glued after it."""
    out = []
    if b"%|" in chunk:
        for m in _GLUED_BAR.finditer(chunk):
            if m.start() > 0 and chunk[m.start() - 1] in _DIGITS:
                out.append(m.start(1))
    if b"<" in chunk:
        for m in _GLUED_TIME.finditer(chunk):
            if _TIME_HEAD.search(chunk, max(0, m.start() - 12), m.start()):
                out.append(m.start(1))
    return out


def needs_view(chunk: bytes) -> bool:
    return b"\r" in chunk or b"\x1b" in chunk or b"%|" in chunk


def terminal_view(chunk: bytes) -> tuple[bytes, list[int], list[tuple[int, int]]]:
    """(view, breaks, removed): the chunk without ANSI codes and with a newline for every redraw
    and glued message; `breaks` are the offsets in the view of those added newlines (sorted);
    `removed` maps chunk offsets to view offsets: (chunk offset after a removed code, bytes
    removed up to there)."""
    removed: list[tuple[int, int]] = []
    if b"\x1b" in chunk:
        parts: list[bytes] = []
        pos = total = 0
        for m in _ANSI.finditer(chunk):
            parts.append(chunk[pos : m.start()])
            total += m.end() - m.start()
            removed.append((m.end(), total))
            pos = m.end()
        parts.append(chunk[pos:])
        chunk = b"".join(parts)
    breaks = [m.start() for m in _REDRAW.finditer(chunk)] if b"\r" in chunk else []
    breaks += _glued(chunk)
    if breaks:
        breaks = sorted(set(breaks))
        view = bytearray(chunk)
        for at in breaks:
            view[at] = 0x0A
        chunk = bytes(view)
    return chunk, breaks, removed


def view_offset(removed: list[tuple[int, int]], offset: int) -> int:
    """Where a chunk offset (a line start, never inside a removed code) is in the view."""
    i = bisect_left(removed, (offset + 1, -1)) - 1
    return offset - (removed[i][1] if i >= 0 else 0)


def added_before(breaks: list[int], offset: int) -> int:
    """How many added line breaks come before this view offset."""
    return bisect_left(breaks, offset)
