"""Inputs for the fuzz tests: arbitrary text, and lines of the corpora with mutations."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from hypothesis import strategies as st

from ..conftest import REPO

_SUFFIXES = (".log", ".txt", ".json", ".out", ".err", ".bt", ".gdb")


@cache
def corpus_files() -> tuple[Path, ...]:
    """Small text files of the corpora, examples and fixtures, in a fixed order."""
    out = []
    for base in ("examples", "corpora", "tests/fixtures"):
        for p in sorted((REPO / base).rglob("*")):
            if p.is_file() and (p.suffix in _SUFFIXES or "dmesg" in p.name) and p.stat().st_size < 256 << 10:
                out.append(p)
    return tuple(out)


@cache
def corpus_lines() -> tuple[str, ...]:
    lines: set[str] = set()
    for p in corpus_files():
        for line in p.read_text("utf-8", "replace").splitlines():
            if 8 < len(line) < 400:
                lines.add(line)
    return tuple(sorted(lines))


_ODD = st.sampled_from(
    [
        "",
        " ",
        "\t",
        "\r",
        "\x1b[2J",
        "\x00",
        "\ufffd",
        "²",
        "٣",
        "[",
        "]",
        "{",
        "}",
        '"',
        "'",
        ":",
        "\\",
        "#0 ",
        "0x",
        "-1",
        "99999999999999999999",
    ]
)


@st.composite
def mutated_line(draw: st.DrawFn) -> str:
    """A real log line, then a few edits: cut, spliced with another, odd characters put in."""
    line = draw(st.sampled_from(corpus_lines()))
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.integers(0, 4))
        i = draw(st.integers(0, len(line)))
        if op == 0:
            line = line[:i]
        elif op == 1:
            line = line[:i] + draw(_ODD) + line[i:]
        elif op == 2:
            j = draw(st.integers(0, len(line)))
            line = line[: min(i, j)] + line[max(i, j) :]
        elif op == 3:
            other = draw(st.sampled_from(corpus_lines()))
            line = line[:i] + other[draw(st.integers(0, len(other))) :]
        else:
            line = line[:i] + draw(st.text(max_size=8)) + line[i:]
    return line


def log_line() -> st.SearchStrategy[str]:
    return st.one_of(mutated_line(), st.text(max_size=200).map(lambda s: s.replace("\n", " ")))


def log_lines(max_size: int = 12) -> st.SearchStrategy[list[str]]:
    return st.lists(log_line(), min_size=1, max_size=max_size)
