"""PyTorch's NCCL flight recorder dumps (`TORCH_NCCL_TRACE_BUFFER_SIZE`, written on a watchdog
timeout to `TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>`, by default `/tmp/nccl_trace_rank_<rank>`).

A dump is a dict of plain values (`version`, `pg_config`, `pg_status`, `entries`: one record per
collective with `collective_seq_id`, `profiling_name`, `state` scheduled/started/completed,
`process_group`), written as a pickle or as JSON. It is read without unpickling anything: a
restricted unpickler refuses every class and function a pickle may name, so only dicts, lists,
tuples, strings, numbers, booleans and None come out, and a file larger than MAX_BYTES is not
read at all.

What it tells: the last collective each rank enqueued on each process group. The rank whose
last collective on the default group is behind every other rank's is the one they waited for.
"""

from __future__ import annotations

import io
import json
import pickle
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_BYTES = 64 << 20
_NAME = re.compile(r"(?:^|/)nccl_trace_rank_(\d+)(?:\.json)?$")


class _DataOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused {module}.{name}: a flight-recorder dump holds plain data only")


@dataclass(frozen=True)
class Dump:
    rank: int | None
    last_seq: dict[str, int]  # process group -> the last collective_seq_id it enqueued
    last_entry: dict[str, dict[str, Any]]  # process group -> that entry


def looks_like_dump(head: bytes, name: str) -> bool:
    """A pickle or JSON whose head shows the flight recorder's keys (or the dump's file name)."""
    if _NAME.search(name):
        return True
    if head[:1] == b"\x80" and b"entries" in head and b"collective_seq_id" in head:
        return True
    return head.lstrip()[:1] == b"{" and b'"entries"' in head and b'"collective_seq_id"' in head


def read_dump(path: Path, rel: str) -> Dump:
    """The dump's last collective per process group. Raises ValueError for what is not one."""
    if path.stat().st_size > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES >> 20} MiB, not read")
    raw = path.read_bytes()
    data: Any
    if raw[:1] == b"\x80":
        try:
            data = _DataOnly(io.BytesIO(raw)).load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, MemoryError) as exc:
            raise ValueError(f"not a plain-data pickle: {exc}") from exc
    else:
        try:
            data = json.loads(raw.decode("utf-8", errors="replace"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"invalid JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise ValueError("no `entries` list: not a flight-recorder dump")
    last_seq: dict[str, int] = {}
    last_entry: dict[str, dict[str, Any]] = {}
    for entry in data["entries"]:
        if not isinstance(entry, dict) or entry.get("is_p2p"):
            continue
        seq = entry.get("collective_seq_id")
        if not isinstance(seq, int):
            continue
        pg = entry.get("process_group")
        group = str(pg[0]) if isinstance(pg, list | tuple) and pg else str(entry.get("pg_id", "0"))
        if seq >= last_seq.get(group, -1):
            last_seq[group] = seq
            last_entry[group] = entry
    m = _NAME.search(rel)
    rank = data.get("rank") if isinstance(data.get("rank"), int) else (int(m.group(1)) if m else None)
    return Dump(rank, last_seq, last_entry)
