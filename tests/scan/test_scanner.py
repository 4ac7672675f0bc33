"""The scan: one pass, line numbers right across chunk boundaries, blocks that cross chunks,
memory that does not grow with the file."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from analyzer.scan import Pattern, Scanner
from analyzer.sources.reader import iter_chunks


def _scanner() -> Scanner:
    return Scanner([Pattern(r"Traceback \(most recent call last\):", "python_traceback", block=3),
                    Pattern(r"out of memory", "signatures", ignore_case=True)])


def test_line_numbers_and_blocks_across_chunks(tmp_path: Path) -> None:
    lines = [f"step {i} loss 1.0" for i in range(5000)]
    lines[1234] = "Traceback (most recent call last):"
    lines[4999] = "RuntimeError: CUDA Out Of Memory"
    f = tmp_path / "log"
    f.write_text("\n".join(lines) + "\n")
    result = _scanner().scan(iter_chunks(f, None, chunk=4096))
    got = {h.line_no: h for h in result.hits}
    assert set(got) == {1235, 5000}
    assert got[1235].lines == ["Traceback (most recent call last):", "step 1235 loss 1.0", "step 1236 loss 1.0", "step 1237 loss 1.0"]
    assert got[5000].owners == ("signatures",)
    assert result.lines == 5000


def test_file_without_final_newline_and_crlf(tmp_path: Path) -> None:
    f = tmp_path / "log"
    f.write_bytes(b"a\r\nb out of memory\r\nc out of memory")
    result = _scanner().scan(iter_chunks(f, None))
    assert [(h.line_no, h.lines[0]) for h in result.hits] == [(2, "b out of memory"), (3, "c out of memory")]


def test_memory_stays_flat_on_a_large_file(tmp_path: Path) -> None:
    f = tmp_path / "big.log"
    line = b"[rank0]: step 123 loss 0.123 lr 1e-4 " + b"x" * 60 + b"\n"
    with f.open("wb") as out:
        for _ in range(40):
            out.write(line * 10000)  # ~40 MB
        out.write(b"RuntimeError: CUDA out of memory\n")
    tracemalloc.start()
    result = _scanner().scan(iter_chunks(f, None))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [h.line_no for h in result.hits] == [400001]
    assert peak < 16 * 1024 * 1024  # a few chunks, not the file


def test_one_huge_line_is_cut_not_held(tmp_path: Path) -> None:
    f = tmp_path / "oneline"
    f.write_bytes(b"out of memory " + b"y" * (50 << 20))
    result = _scanner().scan(iter_chunks(f, None))
    assert len(result.hits) >= 1
    assert all(len(h.lines[0]) <= 65536 for h in result.hits)
