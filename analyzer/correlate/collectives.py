"""Ranks that issued different collectives at the same step of one communicator.

NCCL logs every collective it enqueues under `NCCL_DEBUG_SUBSYS=COLL` (src/enqueue.cc, the same
format from 2.4 to 2.30): `AllReduce: opCount 28c sendbuff ... count N datatype D op O root R
comm 0x... [nranks=4] stream 0x...`. `opCount` counts the collectives of that communicator in
each process, so in a correct program every member logs the same operation at the same opCount.
When one logs AllGather where the others log AllReduce, the ranks wait in different collectives
and the job hangs: the program issued mismatched collectives (different code paths per rank).

The comm pointer is local to its process. Where the init line ties it to a global `commId`
(NCCL 2.12 and later: `comm 0x... rank R nranks N cudaDev D ... commId 0x... - Init COMPLETE`),
processes are compared per commId; otherwise per communicator size, and only processes with a
single communicator of that size take part (two groups of the same size in one process could not
be told apart).
"""

from __future__ import annotations

import re
from collections import defaultdict

from analyzer.model import Event, EventKind

_COLL = re.compile(
    r"\bNCCL INFO (?P<op>[A-Z]\w+): opCount (?P<count>[0-9a-f]+) sendbuff \S+ recvbuff \S+ count (?P<n>\d+)"
    r".*?\bcomm (?P<comm>0x[0-9a-f]+) \[nranks=(?P<nranks>\d+)\]"
)

_Proc = tuple[str | None, int | None]


def collective_mismatch_events(events: list[Event]) -> list[Event]:
    """One event per communicator whose members logged different operations at one opCount: the
    first such opCount, each operation with the ranks (or devices) that logged it."""
    comm_ids: dict[tuple[_Proc, str], str] = {}
    ranks: dict[tuple[_Proc, str], int] = {}
    # (process, comm) -> opCount -> (operation, first event)
    ops: dict[tuple[_Proc, str], dict[int, tuple[str, Event]]] = defaultdict(dict)
    sizes: dict[tuple[_Proc, str], int] = {}
    for e in events:
        if e.kind is not EventKind.NCCL or "NCCL INFO" not in e.message:
            continue
        proc = (e.host, e.pid)
        if "opCount" in e.message:
            m = _COLL.search(e.message)
            if m is None:
                continue
            key = (proc, m["comm"])
            sizes[key] = int(m["nranks"])
            ops[key].setdefault(int(m["count"], 16), (m["op"], e))
        elif isinstance(e.fields.get("comm_id"), str) and isinstance(e.fields.get("comm"), str):
            # the NCCL parser's reading of the init line (`comm 0x... rank R nranks N ... commId 0x...`)
            comm_ids[(proc, e.fields["comm"])] = e.fields["comm_id"]
            if isinstance(e.rank, int):
                ranks[(proc, e.fields["comm"])] = e.rank
    groups: dict[str, list[tuple[_Proc, str]]] = defaultdict(list)
    per_size: dict[tuple[_Proc, int], list[tuple[_Proc, str]]] = defaultdict(list)
    for key, size in sizes.items():
        if size < 2:
            continue
        if key in comm_ids:
            groups[f"commId {comm_ids[key]}"].append(key)
        else:
            per_size[(key[0], size)].append(key)
    for (_, size), keys in per_size.items():
        if len(keys) == 1:
            groups[f"{size} ranks"].append(keys[0])
    out: list[Event] = []
    for group, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        shared = sorted(set.intersection(*(set(ops[k]) for k in members)))
        for count in shared:
            seen: dict[str, list[tuple[_Proc, str]]] = defaultdict(list)
            for k in members:
                seen[ops[k][count][0]].append(k)
            if len(seen) < 2:
                continue
            out.append(_mismatch(group, count, seen, ops, ranks))
            break
    return out


def _who(key: tuple[_Proc, str], ranks: dict[tuple[_Proc, str], int], first: Event) -> str:
    if key in ranks:
        return f"rank {ranks[key]}"
    if first.rank is not None:
        return f"rank {first.rank}"
    dev = first.fields.get("cuda_dev")
    host, pid = key[0]
    return f"pid {pid}" + (f" (GPU {dev})" if isinstance(dev, int) else "") + (f" on {host}" if host else "")


def _mismatch(
    group: str,
    count: int,
    seen: dict[str, list[tuple[_Proc, str]]],
    ops: dict[tuple[_Proc, str], dict[int, tuple[str, Event]]],
    ranks: dict[tuple[_Proc, str], int],
) -> Event:
    # the operation fewer processes logged comes first: most often the odd one out
    ordered = sorted(seen.items(), key=lambda kv: (len(kv[1]), kv[0]))
    parts = [f"{op} on {', '.join(_who(k, ranks, ops[k][count][1]) for k in keys)}" for op, keys in ordered]
    odd_op, odd = ordered[0]
    first = ops[odd[0]][count][1]
    message = f"NCCL collectives differ across the ranks of one communicator ({group}) at opCount {count:x}: " + "; ".join(parts)
    return first.derived(
        EventKind.NCCL,
        message,
        {
            "collective_mismatch": True,
            "op_count": count,
            "operations": sorted(seen),
            "odd_operation": odd_op if len(odd) < max(len(v) for v in seen.values()) else None,
        },
    )
