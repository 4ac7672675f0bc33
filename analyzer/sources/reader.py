"""Reading files of a run dir in chunks, compressed or not, without ever holding a whole file."""

from __future__ import annotations

import bz2
import gzip
import lzma
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

CHUNK = 1 << 20  # 1 MiB

_MAGIC = {
    b"\x1f\x8b": "gz",
    b"\xfd7zXZ\x00": "xz",
    b"BZh": "bz2",
    b"\x28\xb5\x2f\xfd": "zst",
}


def compression_of(head: bytes) -> str | None:
    for magic, name in _MAGIC.items():
        if head.startswith(magic):
            return name
    return None


def open_binary(path: Path, compression: str | None, member: tuple[str, str | None, str] | None = None) -> BinaryIO:
    """A binary stream of the file's content, decompressed. With `member` (archive kind, the
    archive's compression, member name), the content of that member of the archive at `path`."""
    if member is not None:
        from analyzer.sources.archive import open_member

        return _decompressed(open_member(path, *member), compression)
    if compression == "gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if compression == "xz":
        return lzma.open(path, "rb")  # type: ignore[return-value]
    if compression == "bz2":
        return bz2.open(path, "rb")  # type: ignore[return-value]
    if compression == "zst":
        import zstandard

        raw = path.open("rb")
        return zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)  # type: ignore[return-value]
    return path.open("rb")


def _decompressed(raw: BinaryIO, compression: str | None) -> BinaryIO:
    if compression == "gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if compression == "xz":
        return lzma.LZMAFile(raw, "rb")  # type: ignore[return-value]
    if compression == "bz2":
        return bz2.BZ2File(raw, "rb")  # type: ignore[return-value]
    if compression == "zst":
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)  # type: ignore[return-value]
    return raw


class ReadProblem(Exception):
    """A file could not be read to its end; what was read before stays valid."""


def iter_chunks(
    path: Path, compression: str | None, chunk: int = CHUNK, member: tuple[str, str | None, str] | None = None
) -> Iterator[bytes]:
    """Chunks that always end on a line boundary (except, perhaps, the last one).

    A line longer than 4 chunks is cut into pieces so memory stays bounded.
    """
    try:
        stream = open_binary(path, compression, member)
    except OSError as exc:
        raise ReadProblem(str(exc)) from exc
    carry = b""
    with stream:
        while True:
            try:
                data = stream.read(chunk)
            except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
                if carry:
                    yield carry
                raise ReadProblem(f"stopped reading: {exc}") from exc
            except Exception as exc:  # zstandard raises its own error type
                if carry:
                    yield carry
                raise ReadProblem(f"stopped reading: {exc}") from exc
            if not data:
                break
            data = carry + data
            cut = data.rfind(b"\n")
            if cut < 0:
                if len(data) >= 4 * chunk:
                    yield data + b"\n"
                    carry = b""
                else:
                    carry = data
                continue
            yield data[: cut + 1]
            carry = data[cut + 1 :]
    if carry:
        yield carry


def read_head(path: Path, size: int = 8192) -> bytes:
    """The first bytes of the file's content (decompressed when compressed)."""
    with path.open("rb") as raw:
        head = raw.read(size)
    compression = compression_of(head)
    if compression is None:
        return head
    try:
        with open_binary(path, compression) as stream:
            return stream.read(size)
    except Exception:
        return b""


def read_text_limited(
    path: Path, compression: str | None, limit: int = 16 << 20, member: tuple[str, str | None, str] | None = None
) -> tuple[str, bool]:
    """The decoded text of a small file, at most `limit` bytes; the flag says it was cut."""
    parts: list[bytes] = []
    total = 0
    cut = False
    try:
        for chunk in iter_chunks(path, compression, member=member):
            parts.append(chunk)
            total += len(chunk)
            if total >= limit:
                cut = True
                break
    except ReadProblem:
        cut = True
    return b"".join(parts)[:limit].decode("utf-8", errors="replace"), cut
