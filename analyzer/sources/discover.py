"""Discovery of a run dir: every file, its kind (by content first, then by name), rank and host.

Nothing is ever opened for writing. Symlinks that lead out of the run dir are not followed
unless asked; FIFOs, devices and sockets are skipped (opening a FIFO would block).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, replace
from pathlib import Path

from analyzer.model import SourceKind, SourceStatus
from analyzer.sources import safe_json
from analyzer.sources.archive import archive_kind
from analyzer.sources.archive import members as archive_members
from analyzer.sources.flight_recorder import looks_like_dump
from analyzer.sources.reader import FileId, ReadProblem, compression_of, open_regular, read_head

_RANK_IN_NAME = re.compile(r"(?:^|[^a-z])(?:rank|proc|worker|local_rank)[_-]?(\d{1,5})(?!\d)", re.I)
_HOST_DIR = re.compile(
    r"^(?:(?:node|host|worker|machine|server|gpu|dgx|compute|cn|hpc|nid)[\w.-]*\d[\w.-]*|[\w.-]*node[\w.-]*\d[\w.-]*)$", re.I
)
LABEL_FILE = "case.yaml"
_ATTEMPT = re.compile(r"^attempt_\d+$")

_KERNEL_LINE = re.compile(
    rb"^(?:\[\s*\d+\.\d+\]|\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d [\d:]{8} \d{4}\]|"
    rb"[A-Z][a-z]{2} [ \d]\d [\d:]{8} \S+ kernel:|\d{4}-\d\d-\d\dT[\d:.]+\S* \S+ kernel:)",
    re.M,
)
_NCCL_LINE = re.compile(rb"\bNCCL (?:INFO|WARN|TRACE)\b")
_GDB_LINE = re.compile(rb"^(?:#\d+\s+(?:0x[0-9a-f]+ in |[\w:<~]).*|Thread \d+ \(.*\):?)\s*$", re.M)
_GDB_TOP = re.compile(rb"^#0 +(?:0x[0-9a-fA-F]+ in )?\S+ \(", re.M)
_FAULTHANDLER = re.compile(rb"^(?:Fatal Python error: |Current thread 0x[0-9a-f]+ \(most recent call first\))", re.M)


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: Path  # absolute
    rel: str  # relative to the run dir, with forward slashes
    kind: SourceKind
    size: int
    compression: str | None
    rank: int | None
    host: str | None
    status: SourceStatus = SourceStatus.PENDING
    note: str = ""
    file_id: FileId | None = None  # (device, inode) when listed: the file opened later must be this one
    via_symlink: bool = False  # listed through a symlink (inside the run dir): opened following it
    member: tuple[str, str | None, str] | None = None  # (archive kind, its compression, name) of an archive member
    mtime: float | None = None  # when a file that is read (an archive member: its archive) was last written


class RunDirError(Exception):
    """The run dir itself cannot be analyzed (missing, not a directory, unreadable)."""


MAX_DEPTH = 32  # directory levels below the run dir that are read
MAX_FILES = 20000  # files listed; the rest are named in one note


def display_name(rel: str) -> str:
    """A path as it may be shown: bytes that are not UTF-8 (kept by the file system as
    surrogates) written as \\xNN escapes, so every report stays valid UTF-8."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def discover(
    run_dir: Path, follow_symlinks: bool = False, max_depth: int = MAX_DEPTH, max_files: int = MAX_FILES
) -> list[SourceFile]:
    """Every file under `run_dir`, sorted by relative path.

    The walk keeps its own stack (no recursion, whatever the nesting), reads at most `max_depth`
    levels and `max_files` files, and every directory it cannot read or does not enter becomes
    a note."""
    if run_dir.is_file():  # one log file, or an archive of a run dir (read in place)
        return _one_file(run_dir)
    if not run_dir.exists():
        raise RunDirError(f"{run_dir}: no such directory")
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: not a directory, a log file or an archive (give the directory the job left behind)")
    if not os.access(run_dir, os.R_OK | os.X_OK):
        raise RunDirError(f"{run_dir}: permission denied")
    root = run_dir.resolve()
    found: list[SourceFile] = []
    seen_dirs: set[tuple[int, int]] = set()
    stack: list[tuple[Path, int]] = [(root, 0)]
    files = 0
    over: list[str] = []
    while stack:
        here, depth = stack.pop()
        try:
            st = here.stat()
            key = (st.st_dev, st.st_ino)
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if here == root:
                raise RunDirError(f"{run_dir}: cannot be read: {exc.strerror or exc}") from exc
            found.append(_skipped(here, root, f"directory not read: {exc.strerror or exc}", status=SourceStatus.ERROR))
            continue
        if key in seen_dirs:  # a symlink loop
            continue
        seen_dirs.add(key)
        subdirs: list[Path] = []
        for entry in entries:
            path = here / entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=follow_symlinks)
                link_to_dir = not is_dir and entry.is_symlink() and entry.is_dir()
            except OSError:
                is_dir = link_to_dir = False
            if link_to_dir:  # not followed: inside the run dir it is read where it leads
                if not _inside(path, root):
                    found.append(_skipped(path, root, "symlink to a directory outside the run dir, not followed"))
                continue
            if is_dir:
                if depth + 1 > max_depth:
                    found.append(_skipped(path, root, f"directory deeper than {max_depth} levels, not read"))
                else:
                    subdirs.append(path)
                continue
            if here == root and entry.name == LABEL_FILE:
                continue  # a labeled corpus case's answer, never evidence
            files += 1
            if files > max_files:
                over.append(_rel(path, root))
                continue
            found.extend(_expand(_describe(path, root, follow_symlinks)))
        stack.extend((d, depth + 1) for d in reversed(subdirs))
    if over:
        found.append(
            SourceFile(
                root,
                display_name(over[0]),
                SourceKind.OTHER,
                0,
                None,
                None,
                None,
                SourceStatus.SKIPPED,
                f"{len(over)} more file(s) after the first {max_files} not read (the file limit)",
            )
        )
    found.sort(key=lambda s: s.rel)
    return found


def _inflate_head(data: bytes, compression: str) -> bytes:
    """The first decompressed bytes of a compressed member's head (empty when they cannot be had)."""
    import bz2
    import lzma
    import zlib

    try:
        if compression == "gz":
            return zlib.decompressobj(wbits=31).decompress(data, 16384)
        if compression == "xz":
            return lzma.LZMADecompressor().decompress(data, 16384)
        if compression == "bz2":
            return bz2.BZ2Decompressor().decompress(data, 16384)
        if compression == "zst":
            import zstandard

            return zstandard.ZstdDecompressor().decompressobj().decompress(data)[:16384]
    except Exception:
        return b""
    return b""


def _is_archive(src: SourceFile) -> bool:
    return src.member is not None and src.member[2] == ""


def _one_file(path: Path) -> list[SourceFile]:
    """A single log file given instead of a run dir, or an archive of a run dir."""
    desc = _describe(path, path.parent.resolve(), follow_symlinks=True)
    if _is_archive(desc):
        found = _expand(replace(desc, rel=""))
        if not found:
            raise RunDirError(f"{path}: the archive holds no files ({desc.note or 'no regular file in it'})")
        return sorted(found, key=lambda s: s.rel)
    if desc.status in (SourceStatus.SKIPPED, SourceStatus.ERROR):
        raise RunDirError(f"{path}: cannot be analyzed: {desc.note}")
    return [desc]


def _expand(src: SourceFile) -> list[SourceFile]:
    """An archive's members as sources (`ARCHIVE/member` relative paths); any other file as it is."""
    if not _is_archive(src) or src.member is None:
        return [src]
    kind, compression, _ = src.member
    listed, note = archive_members(src.path, kind, compression)
    prefix = f"{src.rel}/" if src.rel else ""
    out = []
    for m in listed:
        rel = prefix + m.name
        rank, host = rank_host_from_path(rel)
        inner = compression_of(m.head)
        head = _inflate_head(m.head, inner) if inner else m.head
        mkind = sniff(head, m.name) if head else SourceKind.TRAINING_LOG
        status, mnote = SourceStatus.PENDING, ""
        if archive_kind(m.head, head):
            status, mnote = SourceStatus.SKIPPED, "an archive inside an archive, not read"
        elif mkind is SourceKind.CORE_DUMP:
            status, mnote = SourceStatus.SKIPPED, "a core dump inside an archive: extract it and run `postmortem core` on it"
        elif mkind is SourceKind.OTHER:
            status, mnote = SourceStatus.SKIPPED, "binary or unrecognised content"
        elif m.size == 0:
            status, mnote = SourceStatus.SKIPPED, "empty file"
        out.append(
            SourceFile(
                src.path,
                rel,
                mkind,
                m.size,
                inner,
                rank,
                host,
                status,
                mnote,
                member=(kind, compression, m.name),
                mtime=src.mtime,
            )
        )
    if note:
        out.append(
            SourceFile(src.path, src.rel or src.path.name, SourceKind.OTHER, src.size, None, None, None, SourceStatus.ERROR, note)
        )
    return out


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
        return True
    except (ValueError, OSError, RuntimeError):
        return False


def _rel(path: Path, root: Path) -> str:
    return display_name(path.relative_to(root).as_posix())


def _skipped(path: Path, root: Path, note: str, status: SourceStatus = SourceStatus.SKIPPED, size: int = 0) -> SourceFile:
    rank, host = rank_host_from_path(_rel(path, root))
    return SourceFile(path, _rel(path, root), SourceKind.OTHER, size, None, rank, host, status, note)


def _describe(path: Path, root: Path, follow_symlinks: bool) -> SourceFile:
    rel = _rel(path, root)
    link = path.is_symlink()
    if link:
        try:
            target_ok = _inside(path, root)
        except RuntimeError:
            return _skipped(path, root, "symlink loop")
        if not target_ok and not follow_symlinks:
            return _skipped(path, root, "symlink to a file outside the run dir, not followed")
    try:
        st = path.stat()
    except OSError as exc:
        return _skipped(path, root, f"cannot stat: {exc.strerror or exc}", status=SourceStatus.ERROR)
    if not stat.S_ISREG(st.st_mode):
        what = "FIFO" if stat.S_ISFIFO(st.st_mode) else "special file"
        return _skipped(path, root, f"{what}, not read")
    if not os.access(path, os.R_OK):
        return _skipped(path, root, "permission denied", status=SourceStatus.ERROR, size=st.st_size)
    file_id = (st.st_dev, st.st_ino)
    try:
        with open_regular(path, file_id, follow=link) as raw:
            raw_head = raw.read(16384)
    except (ReadProblem, OSError) as exc:
        return _skipped(path, root, str(exc).replace("cannot open:", "cannot read:"), status=SourceStatus.ERROR, size=st.st_size)
    if st.st_size == 0:
        return _skipped(path, root, "empty file")
    compression = compression_of(raw_head)
    head = read_head(path, 16384, file_id, follow=link) if compression else raw_head
    packed = archive_kind(raw_head, head)
    if packed:
        rank, host = rank_host_from_path(rel)
        member = (packed, compression, "")  # the archive itself: expanded into its members
        return SourceFile(path, rel, SourceKind.OTHER, st.st_size, compression, rank, host, member=member, mtime=st.st_mtime)
    kind = SourceKind.FLIGHT_RECORDER if not compression and looks_like_dump(head, rel) else sniff(head, path.name)
    rank, host = rank_host_from_path(rel)
    note = ""
    status = SourceStatus.PENDING
    if kind is SourceKind.OTHER:
        status, note = SourceStatus.SKIPPED, "binary or unrecognised content"
    return SourceFile(path, rel, kind, st.st_size, compression, rank, host, status, note, file_id, link, mtime=st.st_mtime)


def _is_core(head: bytes) -> bool:
    # ELF, e_type == ET_CORE (4), either byte order
    if not head.startswith(b"\x7fELF") or len(head) < 18:
        return False
    little = head[5] == 1
    e_type = int.from_bytes(head[16:18], "little" if little else "big")
    return e_type == 4


_NOT_CONTROL = bytes(b for b in range(256) if not (b < 32 and b not in (9, 10, 12, 13, 27)))


def sniff(head: bytes, name: str) -> SourceKind:
    """The kind of a file from its first bytes (decompressed), with the name as a tie-breaker."""
    if _is_core(head):
        return SourceKind.CORE_DUMP
    nuls = head[:4096].count(b"\x00")
    if nuls > max(8, len(head[:4096]) // 100):
        return SourceKind.OTHER  # a few NULs happen in logs (a C handler writing sizeof(msg)); many mean binary
    sample = head[:16384]
    window = sample[:4096]
    controls = len(window.translate(None, _NOT_CONTROL))  # bytes < 32 but tab, LF, FF, CR, ESC
    undecodable = window.decode("utf-8", errors="replace").count("\ufffd")
    if window and (controls > 0.05 * len(window) or undecodable > 0.10 * len(window)):
        return SourceKind.OTHER
    stripped = sample.lstrip()
    if stripped.startswith(b"{") and b'"message"' in sample:
        try:
            safe_json.loads(head.decode("utf-8", "replace"))
            return SourceKind.ELASTIC_ERROR
        except ValueError:
            if b"extraInfo" in sample or b"py_callstack" in sample:
                return SourceKind.ELASTIC_ERROR
    lines = max(1, sample.count(b"\n"))
    lower = name.lower()
    # each pattern is tried only where the literal it needs occurs (a `find` is far cheaper)
    if (
        (b"Fatal Python error: " in sample or b"Current thread 0x" in sample)
        and _FAULTHANDLER.search(sample)
        and b"Traceback (most recent call last)" not in sample[:4096]
    ):
        if sample.lstrip().startswith((b"Fatal Python error", b"Current thread", b"Thread 0x")):
            return SourceKind.FAULTHANDLER
    gdb_lines = len(_GDB_LINE.findall(sample)) if b"#" in sample or b"Thread " in sample else 0
    if gdb_lines >= 3 and (
        gdb_lines >= 0.2 * lines
        or (b"#0" in sample and _GDB_TOP.search(sample) and b"Traceback (most recent call last)" not in sample)
    ):
        return SourceKind.GDB_BACKTRACE  # `bt full` spends most lines on locals: a #0 frame decides
    kernel_lines = len(_KERNEL_LINE.findall(sample)) if b"[" in sample or b" kernel:" in sample else 0
    if kernel_lines >= 0.5 * lines or (kernel_lines and any(k in lower for k in ("dmesg", "kern", "syslog", "journal"))):
        return SourceKind.KERNEL_LOG
    nccl_lines = len(_NCCL_LINE.findall(sample)) if b"NCCL " in sample else 0
    if nccl_lines >= 0.5 * lines or (nccl_lines and "nccl" in lower):
        return SourceKind.NCCL_LOG
    if lower.endswith((".bt", ".gdb")) or "backtrace" in lower:
        return SourceKind.GDB_BACKTRACE if gdb_lines else SourceKind.TRAINING_LOG
    return SourceKind.TRAINING_LOG


def rank_host_from_path(rel: str) -> tuple[int | None, str | None]:
    """Rank and host told by the path: `rank3.log`, `node7/...`, torchrun's `attempt_0/3/`."""
    parts = rel.split("/")
    rank: int | None = None
    host: str | None = None
    for i, part in enumerate(parts):
        m = _RANK_IN_NAME.search(part)
        if m:
            rank = int(m.group(1))
        elif part.isdecimal() and i > 0 and _ATTEMPT.match(parts[i - 1]):
            rank = int(part)
        if i < len(parts) - 1 and _HOST_DIR.match(part) and not _RANK_IN_NAME.search(part):
            host = part
    return rank, host
