"""Run dirs shipped as archives (`.tar`, `.tar.gz`/`.tgz`, `.tar.xz`, `.tar.bz2`, `.tar.zst`,
`.zip`), read in place: members are listed and streamed, never extracted to disk.

An archive is known by its content (the zip signature; `ustar` at offset 257 of the
decompressed stream), not by its name. A member is read through the same chunked reader as a
compressed file (`reader.iter_chunks`), so the same size limits hold. Only regular files are
members; names are used as given (relative, `./` and leading `/` dropped) and never touched on
disk. An archive inside an archive, and a core dump inside an archive (gdb needs a file), are
listed with a note and not read.

A tar member is found by streaming the archive from its start (compressed tars cannot seek),
so an archive of N members is decompressed about N/2 times over when all are read; the
archive's members are at most MAX_MEMBERS.
"""

from __future__ import annotations

import contextlib
import io
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

MAX_MEMBERS = 10_000
MAX_MEMBER_BYTES = 1 << 30  # a tar member's content held in memory while it is scanned
MAX_LISTED_BYTES = 32 << 30  # decompressed bytes a tar's listing may stream through
HEAD = 16384


@dataclass(frozen=True, slots=True)
class Member:
    name: str  # relative, forward slashes
    size: int
    head: bytes  # the first bytes of the member's content


class ArchiveError(Exception):
    """The archive cannot be listed (corrupt, truncated); what was listed before stays valid."""


def archive_kind(raw_head: bytes, head: bytes) -> str | None:
    """`zip`, `tar` or None, from the file's first bytes (`raw_head`) and its decompressed head."""
    if raw_head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    return None


def clean_name(name: str) -> str | None:
    """A member name as a relative path; None for one that names nothing (`/`, `.`)."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    return "/".join(parts) or None


def members(path: Path, kind: str, compression: str | None) -> tuple[list[Member], str]:
    """The regular-file members of an archive with their heads, and a note (empty when all went well)."""
    out: list[Member] = []
    note = ""
    try:
        for m in _iter_members(path, kind, compression):
            if len(out) >= MAX_MEMBERS:
                note = f"more than {MAX_MEMBERS} members: the rest not read"
                break
            out.append(m)
    except ArchiveError as exc:
        note = str(exc)
    return out, note


def _iter_members(path: Path, kind: str, compression: str | None) -> Iterator[Member]:
    if kind == "zip":
        try:
            with zipfile.ZipFile(path) as zf:
                for info in zf.infolist():
                    name = clean_name(info.filename)
                    if info.is_dir() or name is None:
                        continue
                    with zf.open(info) as fh:
                        head = fh.read(HEAD)
                    yield Member(name, info.file_size, head)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
            raise ArchiveError(f"zip archive not read to its end: {exc}") from exc
        return
    try:
        with (
            _decompressed_stream(path, compression) as raw,
            _Bounded(raw, MAX_LISTED_BYTES) as stream,
            tarfile.open(fileobj=stream, mode="r|") as tf,
        ):
            for entry in tf:
                name = clean_name(entry.name)
                if not entry.isreg() or name is None:
                    continue
                member_fh = tf.extractfile(entry)
                head = member_fh.read(HEAD) if member_fh is not None else b""
                yield Member(name, entry.size, head)
    except ArchiveError:
        raise
    except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
        raise ArchiveError(f"tar archive not read to its end: {exc}") from exc
    except Exception as exc:  # zstandard raises its own error type
        raise ArchiveError(f"tar archive not read to its end: {exc}") from exc


class _Chunks(io.RawIOBase):
    """A file-like view of an iterator of byte chunks (the reader's bounded decompression)."""

    def __init__(self, chunks: Iterator[bytes], owner: IO[bytes]) -> None:
        self._chunks = chunks
        self._owner = owner
        self._buf = b""

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buf) < size:
            piece = next(self._chunks, b"")
            if not piece:
                break
            self._buf += piece
        if size < 0:
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:size], self._buf[size:]
        return out

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._owner.close()
        super().close()


def _decompressed_stream(path: Path, compression: str | None) -> IO[bytes]:
    """The archive file's bytes, decompressed when it is compressed, opened as a regular file."""
    from analyzer.sources.reader import ReadStats, _content, open_regular

    raw = open_regular(path, follow=True)
    if compression is None:
        return raw
    return _Chunks(_content(raw, compression, ReadStats()), raw)  # type: ignore[return-value]


class _Bounded(io.RawIOBase):
    """A stream that stops with ArchiveError after `limit` bytes (a tar's listing reads every
    member's bytes to reach the next header: a huge or hostile archive is cut there)."""

    def __init__(self, inner: IO[bytes], limit: int) -> None:
        self._inner = inner
        self._left = limit
        self._limit = limit

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._inner.read(size)
        self._left -= len(data)
        if self._left < 0:
            raise ArchiveError(f"listing stopped after {self._limit >> 20} MiB of decompressed data (size limit)")
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _MemberStream(io.RawIOBase):
    """A member's bytes; closing it closes the archive under it."""

    def __init__(self, inner: IO[bytes], *owners: object) -> None:
        self._inner = inner
        self._owners = owners

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._inner.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int = -1) -> bytes:
        return self._inner.read(size)

    def close(self) -> None:
        for owner in (self._inner, *self._owners):
            with contextlib.suppress(Exception):
                owner.close()  # type: ignore[attr-defined]
        super().close()


def open_member(path: Path, kind: str, compression: str | None, name: str) -> BinaryIO:
    """A binary stream of one member's content; OSError when the member is not there."""
    if kind == "zip":
        zf = zipfile.ZipFile(path)  # noqa: SIM115 (closed by the returned stream)
        for info in zf.infolist():
            if not info.is_dir() and clean_name(info.filename) == name:
                return _MemberStream(zf.open(info), zf)  # type: ignore[return-value]
        zf.close()
        raise FileNotFoundError(f"{name}: no such member")
    stream = _decompressed_stream(path, compression)
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tf:
            for entry in tf:
                if entry.isreg() and clean_name(entry.name) == name:
                    member_fh = tf.extractfile(entry)
                    if member_fh is not None:  # copied out while the stream is here (at most MAX_MEMBER_BYTES)
                        return io.BytesIO(member_fh.read(MAX_MEMBER_BYTES))
    except (tarfile.TarError, EOFError) as exc:
        raise OSError(f"{name}: {exc}") from exc
    finally:
        stream.close()
    raise FileNotFoundError(f"{name}: no such member")
