"""Cache entries that cannot run code and are checked before use.

Every entry is a file in a private cache directory (see `paths.cache_dir`) holding a header line
with the SHA-256 of its payload, then the payload: JSON, or a native database that is only handed
to its library after the hash matched. Nothing is ever unpickled. An entry is used only when it
is a regular file (opened without following a symlink), owned by the user, not writable by group
or others, and its hash matches; otherwise it is rebuilt and a warning is logged.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("analyzer.cache")

_MAGIC = b"postmortem-cache 1 "
MAX_ENTRY = 256 << 20


class TamperedEntry(Exception):
    """An entry exists but fails its checks."""


def _open_checked(path: Path) -> bytes | None:
    """The entry's bytes, None when there is none; TamperedEntry when it fails a check."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TamperedEntry(f"cannot be opened safely ({exc.strerror or exc})") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TamperedEntry("not a regular file")
        if st.st_uid != os.getuid():
            raise TamperedEntry(f"owned by uid {st.st_uid}, not by the user")
        if st.st_mode & 0o022:
            raise TamperedEntry(f"writable by others (mode {stat.S_IMODE(st.st_mode):o})")
        if st.st_size > MAX_ENTRY:
            raise TamperedEntry("too large")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(st.st_size + 1)
    finally:
        os.close(fd)


def read_entry(directory: Path, name: str) -> bytes | None:
    """The verified payload of entry `name`, or None (missing, or failed a check: then a warning
    is logged and the entry removed so that it is rebuilt)."""
    path = directory / name
    try:
        data = _open_checked(path)
        if data is None:
            return None
        header, sep, payload = data.partition(b"\n")
        if not sep or not header.startswith(_MAGIC):
            raise TamperedEntry("no valid header")
        if hashlib.sha256(payload).hexdigest().encode() != header[len(_MAGIC) :]:
            raise TamperedEntry("content does not match its hash")
        return payload
    except TamperedEntry as exc:
        log.warning("cache entry %s %s; it is ignored and rebuilt", path, exc)
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None


def write_entry(directory: Path, name: str, payload: bytes) -> None:
    """Store an entry atomically (a private temp file renamed over the name); errors are ignored:
    a cache is an optimisation."""
    data = _MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
    tmp = directory / f".{name}.tmp{os.getpid()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, directory / name)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def read_json(directory: Path, name: str, object_hook: Callable[[dict[str, Any]], Any] | None = None) -> Any:
    """The entry's JSON value (`object_hook` as json.loads takes it), None when it is missing,
    fails its checks or is not JSON."""
    payload = read_entry(directory, name)
    if payload is None:
        return None
    try:
        return json.loads(payload, object_hook=object_hook)
    except (ValueError, KeyError, TypeError):  # not JSON, or not the shape the hook reads
        log.warning("cache entry %s is not valid JSON; it is ignored and rebuilt", directory / name)
        return None


def write_json(directory: Path, name: str, value: Any) -> None:
    try:
        payload = json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-8")
    except (TypeError, ValueError):
        return
    write_entry(directory, name, payload)
