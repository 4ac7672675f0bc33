"""Reading files of a run dir in chunks, compressed or not, without ever holding a whole file.

Every read is bounded and says what it left out (`ReadStats`):

* a file is opened without blocking and without following a symlink swapped in after it was
  listed, checked to be a regular file after opening (`fstat`), and, when discovery recorded
  it, to be the same file (device and inode) that was listed;
* decompression is done here, from the raw bytes, in bounded steps: a stream that ends early
  (a truncated .gz/.xz/.bz2/.zst) keeps everything read before the cut, with a note, and a
  stream of many members that expands to GiBs stops at the size limit;
* a line longer than `MAX_LINE_BYTES` keeps its first `MAX_LINE_BYTES`; the rest of it is
  skipped (not turned into more lines), so later line numbers stay right;
* a deadline stops the reading of a file between chunks.
"""

from __future__ import annotations

import bz2
import errno
import fcntl
import lzma
import os
import stat
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

# 256 KiB: a chunk is gone over several times (read, scanned, its lines counted), which runs about
# a quarter faster while it stays in a core's L2 cache than with 1 MiB chunks
CHUNK = 256 << 10
MAX_LINE_BYTES = 4 << 20  # a longer line is cut here; the scanner keeps 64 KiB of it anyway
_RAW = 256 << 10  # compressed bytes fed at a time
_ZSTD_RAW = 256  # zstd has no output bound per call: small inputs keep each call's output small

_MAGIC = {
    b"\x1f\x8b": "gz",
    b"\xfd7zXZ\x00": "xz",
    b"BZh": "bz2",
    b"\x28\xb5\x2f\xfd": "zst",
}

FileId = tuple[int, int]  # (st_dev, st_ino)


def compression_of(head: bytes) -> str | None:
    for magic, name in _MAGIC.items():
        if head.startswith(magic):
            return name
    return None


class ReadProblem(Exception):
    """A file could not be read to its end; what was read before stays valid."""


class Unplaced(ReadProblem):
    """A part of a file (`iter_chunks`' start) that cannot be read apart from what comes before."""


@dataclass
class ReadStats:
    """What a read left out, for the file's note."""

    bytes: int = 0  # content bytes given out (decompressed)
    long_lines: int = 0  # lines cut at MAX_LINE_BYTES
    truncated: str = ""  # the compressed stream ended early or was corrupt
    limit_hit: int = 0  # the size limit that stopped the read, 0 when none did
    out_of_time: bool = False  # the deadline stopped the read
    limit_name: str = "the size limit"

    def notes(self) -> list[str]:
        out = []
        if self.truncated:
            out.append(f"{self.truncated}: kept the {_size(self.bytes)} read before it")
        if self.limit_hit:
            out.append(f"read up to {self.limit_name} ({_size(self.limit_hit)}); the rest was not read")
        if self.out_of_time:
            out.append(f"the time budget ran out after {_size(self.bytes)}; the rest was not read")
        if self.long_lines:
            out.append(f"{self.long_lines} line(s) longer than {_size(MAX_LINE_BYTES)} cut (line numbers kept)")
        return out


def _size(n: int) -> str:
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} bytes"


def open_regular(path: Path, expect: FileId | None = None, follow: bool = False) -> BinaryIO:
    """The file opened for reading, refused unless it is (still) a regular file: opened with
    O_NONBLOCK (a FIFO swapped in cannot block), O_NOFOLLOW unless `follow` (a symlink swapped in
    is not followed), checked with fstat after opening, and compared with the device and inode
    seen when it was listed (`expect`)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise ReadProblem("became a symlink after it was listed; not followed") from exc
        raise ReadProblem(f"cannot open: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a directory" if stat.S_ISDIR(st.st_mode) else "a special file"
            raise ReadProblem(f"{kind}, not a regular file; not read")
        if expect is not None and (st.st_dev, st.st_ino) != expect:
            raise ReadProblem("replaced by another file after it was listed; not read")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _decompressor(compression: str) -> Any:
    if compression == "gz":
        return zlib.decompressobj(zlib.MAX_WBITS | 16)
    if compression == "xz":
        return lzma.LZMADecompressor()
    if compression == "bz2":
        return bz2.BZ2Decompressor()
    if compression == "zst":
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj()
    raise ValueError(compression)


def _content(raw: BinaryIO, compression: str | None, stats: ReadStats, out_size: int = CHUNK) -> Iterator[bytes]:
    """The file's content in pieces of at most about `out_size` bytes, decompressed in bounded
    steps; a stream that ends early or turns corrupt sets `stats.truncated` and ends the pieces."""
    if compression is None:
        while True:
            data = raw.read(out_size)
            if not data:
                return
            yield data
    feed = _ZSTD_RAW if compression == "zst" else _RAW
    obj = _decompressor(compression)
    buf = b""  # compressed bytes read but not yet given to obj
    raw_done = False

    def more() -> bytes:
        nonlocal raw_done
        if raw_done:
            return b""
        data = raw.read(_RAW)
        raw_done = not data
        return data

    while True:
        # the input of this step: what the decompressor kept back first, new bytes only when it
        # has used up what it had (else its backlog, and the copying, would grow without end)
        try:
            if compression == "gz":
                if obj.unconsumed_tail:
                    inp = obj.unconsumed_tail
                else:
                    inp, buf = (buf or more()), b""
                out = obj.decompress(inp, out_size)
            elif compression == "zst":
                if not buf:
                    buf = more()
                inp, buf = buf[:feed], buf[feed:]
                out = obj.decompress(inp) if inp else b""
                # zstd has no output bound per call: the input step follows the ratio seen
                if len(out) > out_size:
                    feed = max(16, feed // 8)
                elif len(out) < out_size // 4:
                    feed = min(_ZSTD_RAW, feed * 2)
            else:
                if obj.needs_input:
                    inp, buf = (buf or more()), b""
                else:
                    inp = b""
                out = obj.decompress(inp, out_size)
        except Exception as exc:  # zlib.error, LZMAError, OSError from bz2, ZstdError
            stats.truncated = f"corrupt compressed data ({type(exc).__name__})"
            return
        if out:
            yield out
        if obj.eof:
            buf = obj.unused_data + buf
            if not buf:
                buf = more()
            if not buf.strip(b"\0"):
                return  # the end (trailing zero padding is allowed, as gzip does)
            obj = _decompressor(compression)
            continue
        if raw_done and not buf and not out:
            waiting = (compression == "gz" and obj.unconsumed_tail) or (compression in ("xz", "bz2") and not obj.needs_input)
            if not waiting:
                stats.truncated = "the compressed stream ends early (a truncated file)"
                return


def iter_chunks(
    path: Path,
    compression: str | None,
    chunk: int = CHUNK,
    *,
    stats: ReadStats | None = None,
    limit: int | None = None,
    deadline: float | None = None,
    expect: FileId | None = None,
    follow: bool = True,
    member: tuple[str, str | None, str] | None = None,
    start: int = 0,
    stop: int | None = None,
) -> Iterator[bytes]:
    """Chunks of the content that always end on a line boundary (except, perhaps, the last one).

    At most `limit` content bytes are read (the read stops at the last line end before it), and
    none after `deadline` (time.monotonic()); a line longer than MAX_LINE_BYTES keeps its head
    and ends there. `stats` records what was left out. A file that cannot be opened, or is not
    the regular file that was listed, raises ReadProblem.

    `start` and `stop` (multiples of `chunk`; a plain file only) give a part of the file: the
    chunks that a read from the beginning gives for the `chunk`-sized reads in [start, stop),
    the same bytes, so that parts read apart put together are the whole. A part whose start
    cannot be placed so (no line end in the `chunk` bytes before it) raises Unplaced."""
    st = stats if stats is not None else ReadStats()
    if start or stop is not None:
        if compression is not None or member is not None or start % chunk or (stop is not None and stop % chunk):
            raise ValueError("only a plain file is read in parts, at multiples of the chunk size")
    if member is not None:  # (archive kind, the archive's compression, name): a member, read in place
        from analyzer.sources.archive import open_member

        try:
            raw = open_member(path, *member)
        except OSError as exc:
            raise ReadProblem(f"archive member not read: {exc}") from exc
    else:
        raw = open_regular(path, expect, follow)
    carry = b""
    skipping = False  # inside the rest of an over-long line
    given = 0
    at = start  # where the next read begins (a plain file)
    with raw:
        if start:
            try:
                raw.seek(start - chunk)
                before = raw.read(chunk)
            except OSError as exc:
                raise ReadProblem(f"read failed: {exc.strerror or exc}") from exc
            nl = before.rfind(b"\n")
            if len(before) < chunk or nl < 0:
                raise Unplaced(f"no line end in the {chunk} bytes before offset {start}")
            carry = before[nl + 1 :]  # what a read from the beginning carries into this part
            given = start - len(carry)
        for data in _content(raw, compression, st, chunk):
            at += len(data)
            if deadline is not None and time.monotonic() > deadline:
                st.out_of_time = True
                break
            if skipping:
                nl = data.find(b"\n")
                if nl < 0:
                    continue
                data = data[nl + 1 :]
                skipping = False
            cut = data.rfind(b"\n")
            if cut < 0:
                body, carry = b"", carry + data
            else:  # one copy of the chunk (not three)
                body = (
                    b"".join((carry, memoryview(data)[: cut + 1])) if carry else data[: cut + 1] if cut + 1 < len(data) else data
                )
                carry = data[cut + 1 :]
            if len(carry) >= MAX_LINE_BYTES:  # an unfinished line already too long: keep its head
                body += carry[:MAX_LINE_BYTES] + b"\n"
                carry = b""
                skipping = True
                st.long_lines += 1
            if limit is not None and given + len(body) + len(carry) > limit:
                keep = body[: max(0, limit - given)]
                end = keep.rfind(b"\n")
                body = keep[: end + 1] if end >= 0 else b""
                carry = b""
                st.limit_hit = limit
            if body:
                given += len(body)
                st.bytes = given
                yield body
            if st.limit_hit or (stop is not None and at >= stop):
                return  # a part: what is carried on belongs to the next one
    if carry:
        st.bytes = given + len(carry)
        yield carry


def read_head(path: Path, size: int = 8192, expect: FileId | None = None, follow: bool = True) -> bytes:
    """The first bytes of the file's content (decompressed when compressed); b"" when unreadable."""
    try:
        with open_regular(path, expect, follow) as raw:
            head = raw.read(size)
            compression = compression_of(head)
            if compression is None:
                return head
            raw.seek(0)
            out = b""
            for piece in _content(raw, compression, ReadStats(), size):
                out += piece
                if len(out) >= size:
                    break
            return out[:size]
    except (ReadProblem, OSError):
        return b""


def read_text_limited(
    path: Path,
    compression: str | None,
    limit: int = 16 << 20,
    *,
    stats: ReadStats | None = None,
    expect: FileId | None = None,
    follow: bool = True,
    member: tuple[str, str | None, str] | None = None,
) -> tuple[str, bool]:
    """The decoded text of a small file, at most `limit` bytes; the flag says it was cut (or the
    rest could not be read)."""
    st = stats if stats is not None else ReadStats()
    parts: list[bytes] = []
    total = 0
    cut = False
    try:
        for chunk in iter_chunks(path, compression, stats=st, expect=expect, follow=follow, member=member):
            parts.append(chunk)
            total += len(chunk)
            if total >= limit:
                cut = True
                break
    except ReadProblem:
        cut = True
    cut = cut or bool(st.truncated or st.limit_hit or st.long_lines)
    return b"".join(parts)[:limit].decode("utf-8", errors="replace"), cut
