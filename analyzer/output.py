"""Writing a report file so that nothing in the run dir can be written, whatever the path.

The report is written to a new temp file in the target's directory (opened relative to that
directory's descriptor, never following a symlink) and renamed over the target, so a symlink
swapped in at the target during the run is replaced, not followed, and a half-written report
never appears. Before that, the target directory and any existing target are checked by device
and inode against every directory and file of the run dir: a hard link to a run-dir file, or a
path that reaches the run dir through symlinks, is refused.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

FileId = tuple[int, int]
MAX_DEPTH = 64


class OutputRefused(Exception):
    """The output path would write into the run dir, or cannot be written."""


def run_dir_ids(run_dir: Path, max_depth: int = MAX_DEPTH) -> tuple[set[FileId], set[FileId]]:
    """(directories, other entries) of the run dir as (device, inode), symlinks not followed."""
    dirs: set[FileId] = set()
    files: set[FileId] = set()
    try:
        st = os.stat(run_dir)
    except OSError:
        return dirs, files
    dirs.add((st.st_dev, st.st_ino))
    stack = [(str(run_dir), 0)]
    while stack:
        here, depth = stack.pop()
        try:
            with os.scandir(here) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            try:
                est = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(est.st_mode):
                dirs.add((est.st_dev, est.st_ino))
                if depth < max_depth:
                    stack.append((e.path, depth + 1))
            else:
                files.add((est.st_dev, est.st_ino))
    return dirs, files


def write_outside(text: str, output: Path, run_dir: Path) -> None:
    """Write `text` (UTF-8) to `output`, atomically, refusing anything that lands in `run_dir`."""
    dirs, files = run_dir_ids(run_dir)
    parent = output.parent if str(output.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        dfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise OutputRefused(f"{output}: cannot open its directory: {exc.strerror or exc}") from exc
    try:
        dst = os.fstat(dfd)
        if (dst.st_dev, dst.st_ino) in dirs:
            raise OutputRefused(f"{output}: this is inside the run dir; postmortem never writes there")
        name = output.name
        if not name or name in (".", ".."):
            raise OutputRefused(f"{output}: not a file name")
        _check_existing(dfd, name, output, files)
        tmp = f".{name}.{os.getpid()}.tmp"
        try:
            fd = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o666, dir_fd=dfd
            )
        except OSError as exc:
            raise OutputRefused(f"{output}: cannot write: {exc.strerror or exc}") from exc
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(text.encode("utf-8", "backslashreplace"))
                f.flush()
                os.fsync(f.fileno())
            _check_existing(dfd, name, output, files)  # once more, just before the rename
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
    finally:
        os.close(dfd)


def _check_existing(dfd: int, name: str, output: Path, files: set[FileId]) -> None:
    """An existing target (a symlink's own entry, not where it leads) must not be a run-dir file."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputRefused(f"{output}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(st.st_mode):
        raise OutputRefused(f"{output}: is a directory")
    if (st.st_dev, st.st_ino) in files:
        raise OutputRefused(f"{output}: is a file of the run dir (a hard link to it); postmortem never writes there")
