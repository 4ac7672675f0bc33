"""Mutation fuzz through `analyze`: corpus files with bytes flipped, cut, repeated, compressed
and truncated; the analysis finishes, and every format renders, whatever the run dir holds."""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from analyzer.pipeline import Options, analyze
from analyzer.report import render

from .strategies import corpus_files


@st.composite
def mutated_file(draw: st.DrawFn) -> tuple[str, bytes]:
    src = draw(st.sampled_from(corpus_files()))
    data = bytearray(src.read_bytes()[: 64 << 10])
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.integers(0, 5))
        i = draw(st.integers(0, len(data)))
        if op == 0 and data:  # flip a byte
            j = min(i, len(data) - 1)
            data[j] ^= draw(st.integers(1, 255))
        elif op == 1:  # cut
            data = data[:i]
        elif op == 2:  # insert odd bytes
            data[i:i] = draw(st.sampled_from([b"\x00", b"\xff\xfe", b"\r", b"\x1b]0;t\x07", b"[" * 50, b"\n" * 3, b"{" * 3]))
        elif op == 3:  # repeat a slice
            j = draw(st.integers(0, len(data)))
            data[i:i] = data[min(i, j) : max(i, j)] * 2
        elif op == 4:  # splice another corpus file
            other = draw(st.sampled_from(corpus_files())).read_bytes()[:4096]
            data[i:i] = other
        else:
            data[i:i] = draw(st.binary(max_size=16))
    name = draw(st.sampled_from([src.name, "rank3.log", "error.json", "dmesg.txt", "gdb.bt", "nccl.node1.log", "core.77"]))
    payload = bytes(data)
    if draw(st.booleans()) and draw(st.booleans()):
        packed = gzip.compress(payload)
        payload = packed[: draw(st.integers(len(packed) // 2, len(packed)))]
        name += ".gz"
    return name, payload


@given(st.lists(mutated_file(), min_size=1, max_size=4))
def test_analyze_survives_mutated_corpus_files(files: list[tuple[str, bytes]]) -> None:
    run = Path(tempfile.mkdtemp(prefix="pm-fuzz-"))
    try:
        for i, (name, data) in enumerate(files):
            sub = run / f"node{i}"
            sub.mkdir()
            (sub / name).write_bytes(data)
        report = analyze(run, Options(core_timeout=5.0))
        assert len(report.sources) == len(files)
        data = json.loads(render(report, "json"))
        assert data["verdict"]["category"]
        for fmt in ("text", "markdown", "html"):
            assert render(report, fmt)
    finally:
        shutil.rmtree(run)
