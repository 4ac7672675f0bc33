"""Global ranks, hosts, pids and times that hold across a multi-node job.

torchrun's `--tee` prefix `[default5]:` is the LOCAL rank of a worker on its node: on node 2 of a
4 x 8 job it is global rank 21. The same console log usually says so, and each of these maps the
local ranks of one file to global ranks:

- NCCL's init line of the world communicator, printed by that worker:
  `[default5]:gpu-c02:3331:3391 [5] NCCL INFO comm 0x... rank 21 nranks 32 cudaDev 5 ...`
  (the communicator with the most ranks; smaller ones are sub-groups with their own numbering);
- torchrun's failure summary: `rank : 21 (local_rank: 5)`;
- an environment dump of the worker: `RANK=21`, `LOCAL_RANK=5`, or `GROUP_RANK=2` with
  `LOCAL_WORLD_SIZE=8` (global = group rank x local world size + local rank).

Where none does and the job spans nodes, the local rank is kept and a warning says so.

A host printed in the lines (NCCL's `host:pid:tid`, the summary's `host :`) beats the folder name
a file was found under, and a rank's host and pid learned from any of its lines apply to all of
them. An event without its own time takes the time torchrun's summary or error.json gives its
rank's failure, marked approximate (`date_events`, after pids have tied kernel records to ranks).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import replace

from analyzer.model import Event, EventKind

_NOT_A_HOST = (None, "", "localhost", "127.0.0.1")
# what a rank prints as it fails: these take its failure's time when they have none of their own
_DATED_BY_FAILURE = frozenset(
    {
        EventKind.TRACEBACK,
        EventKind.FAULTHANDLER,
        EventKind.SIGNAL,
        EventKind.LAUNCHER_EXIT,
        EventKind.WATCHDOG,
        EventKind.OOM_KILL,
    }
)


# a launcher's record of one of its workers, which names the worker by its local rank
_LAUNCHER_RECORDS = frozenset({EventKind.LAUNCHER_EXIT, EventKind.SIGNAL})


def _world_size(events: list[Event]) -> int | None:
    sizes = [n for e in events if isinstance(n := e.fields.get("nranks"), int) and n > 0]
    sizes += [n for e in events if isinstance(n := e.fields.get("env_world_size"), int) and n > 0]
    return max(sizes) if sizes else None


def local_to_global(events: list[Event]) -> dict[str, dict[int, tuple[int, str]]]:
    """Per file: local rank (the `[defaultN]:` prefix) -> (global rank, what said so)."""
    world = _world_size(events)
    maps: dict[str, dict[int, tuple[int, str]]] = defaultdict(dict)
    group: dict[str, tuple[int, int]] = {}  # file -> (group rank, local world size)
    for e in events:
        file, tee = e.loc.file, e.fields.get("tee_rank")
        f = e.fields
        if e.kind is EventKind.ELASTIC_FAILURE and isinstance(f.get("local_rank"), int) and e.rank is not None:
            maps[file].setdefault(f["local_rank"], (e.rank, "torchrun's summary"))
        if not isinstance(tee, int):
            continue
        if isinstance(f.get("prefix_rank"), int):
            maps[file].setdefault(tee, (f["prefix_rank"], "PyTorch's [rankN]: prefix"))
        if e.kind is EventKind.NCCL and "comm" in f and isinstance(f.get("nranks"), int) and isinstance(f.get("rank"), int):
            if world is None or f["nranks"] == world:
                maps[file].setdefault(tee, (f["rank"], "NCCL's communicator init line"))
        if isinstance(f.get("env_rank"), int):
            maps[file].setdefault(tee, (f["env_rank"], "the RANK variable"))
        if isinstance(f.get("env_group_rank"), int) and isinstance(f.get("env_local_world_size"), int):
            group[file] = (f["env_group_rank"], f["env_local_world_size"])
    for file, (g, n) in group.items():
        tees = {e.fields["tee_rank"] for e in events if e.loc.file == file and isinstance(e.fields.get("tee_rank"), int)}
        for t in tees:
            maps[file].setdefault(t, (g * n + t, "GROUP_RANK x LOCAL_WORLD_SIZE + local rank"))
    return maps


# torchrun --log-dir writes each worker's files under .../attempt_<n>/<local rank>/: on a multi-node
# job that number is the LOCAL rank, which the node's other files (its console) map to a global one
_ATTEMPT_DIR = re.compile(r"(?:^|/)attempt_\d+/(\d+)/[^/]+$")


def _node(file: str, source_hosts: dict[str, str | None]) -> str | None:
    """The node a file belongs to: the host folder it was found under, else its top folder."""
    return source_hosts.get(file) or (file.split("/", 1)[0] if "/" in file else None)


def _node_maps(
    maps: dict[str, dict[int, tuple[int, str]]], source_hosts: dict[str, str | None]
) -> dict[str, dict[int, tuple[int, str]]]:
    """Per node: local rank -> global rank, from any of its files."""
    nodes: dict[str, dict[int, tuple[int, str]]] = defaultdict(dict)
    for file in sorted(maps):
        node = _node(file, source_hosts)
        if node:
            for local, found in sorted(maps[file].items()):
                nodes[node].setdefault(local, found)
    return nodes


def globalize(events: list[Event], source_hosts: dict[str, str | None] | None = None) -> tuple[list[Event], list[str]]:
    """Events with global ranks, the hosts and pids their lines name, and inherited times."""
    warnings: list[str] = []
    source_hosts = source_hosts or {}
    maps = local_to_global(events)
    nodes = _node_maps(maps, source_hosts)
    out: list[Event] = []
    unmapped: dict[str, set[int]] = defaultdict(set)
    for e in events:
        tee = e.fields.get("tee_rank")
        local = e.fields.get("local_rank")
        m = _ATTEMPT_DIR.search(e.loc.file) if tee is None else None
        if m and e.rank == int(m.group(1)) and (node := _node(e.loc.file, source_hosts)):
            # a worker's own file under its node's folder: its path names its local rank
            found = nodes.get(node, {}).get(e.rank)
            if found is not None and found[0] != e.rank:
                e = replace(e, rank=found[0], fields={**e.fields, "rank_from": f"local rank {m.group(1)} via {found[1]}"})
        if tee is None and e.kind in _LAUNCHER_RECORDS and isinstance(local, int) and local == e.rank:
            # the agent's own record ("failed (exitcode: -9) local_rank: 1 (pid: ...)") names a
            # local rank: the same file's summary (or NCCL/env lines) says which global rank it is
            found = maps.get(e.loc.file, {}).get(local)
            if found is not None and found[0] != e.rank:
                e = replace(e, rank=found[0], fields={**e.fields, "rank_from": f"local rank {local} via {found[1]}"})
        if isinstance(tee, int):
            found = maps.get(e.loc.file, {}).get(tee)
            if found is not None:
                if e.rank != found[0]:
                    e = replace(e, rank=found[0], fields={**e.fields, "rank_from": f"local rank {tee} via {found[1]}"})
            else:
                unmapped[e.loc.file].add(tee)
        out.append(e)
    if unmapped and _multi_node(out, unmapped):
        for file, tees in sorted(unmapped.items()):
            warnings.append(
                f"{file}: ranks {', '.join(map(str, sorted(tees)))} are local ranks (torchrun's [defaultN]: prefix); "
                "no line of the file maps them to global ranks"
            )
    return _hosts_and_pids(out, source_hosts), warnings


def _multi_node(events: list[Event], unmapped: dict[str, set[int]]) -> bool:
    """The job spans more than one node: several files carry local-rank prefixes, or the world is
    larger than the local ranks a file shows."""
    tee_files = {e.loc.file for e in events if isinstance(e.fields.get("tee_rank"), int)}
    if len(tee_files) > 1:
        return True
    world = _world_size(events)
    return world is not None and any(world > max(tees) + 1 for tees in unmapped.values())


def _hosts_and_pids(events: list[Event], source_hosts: dict[str, str | None]) -> list[Event]:
    """A rank's host and pid as its own lines print them, applied to all its lines."""
    hosts: dict[int, Counter[str]] = defaultdict(Counter)
    pids: dict[int, Counter[int]] = defaultdict(Counter)
    for e in events:
        if e.rank is None:
            continue
        printed = e.host not in _NOT_A_HOST and e.host != source_hosts.get(e.loc.file)
        if printed and e.host is not None and (e.kind in (EventKind.NCCL, EventKind.ELASTIC_FAILURE) or e.pid is not None):
            hosts[e.rank][e.host] += 1
        if e.pid is not None and e.kind is not EventKind.OOM_KILL:
            pids[e.rank][e.pid] += 1
    if not hosts and not pids:
        return events
    out = []
    for e in events:
        if e.rank is not None and e.kind not in (EventKind.KERNEL, EventKind.XID, EventKind.OOM_KILL, EventKind.OOPS):
            host = hosts[e.rank].most_common(1)[0][0] if hosts.get(e.rank) else None
            pid = pids[e.rank].most_common(1)[0][0] if len(pids.get(e.rank, ())) == 1 else None
            folder = source_hosts.get(e.loc.file)
            if host is not None and e.host != host and (e.host in _NOT_A_HOST or e.host == folder):
                e = replace(e, host=host)
            if pid is not None and e.pid is None:
                e = replace(e, pid=pid)
        out.append(e)
    return out


def _stream(e: Event) -> tuple[str, object]:
    tee = e.fields.get("tee_rank")
    return (e.loc.file, ("local", tee) if isinstance(tee, int) else ("rank", e.rank))


def date_events(events: list[Event]) -> list[Event]:
    """An event of a failing rank without a clock takes the nearest earlier time of its own
    stream (the same file and prefix), else the time torchrun's summary or error.json gives that
    rank's failure; both approximate."""
    failed_at: dict[int, float] = {}
    for e in events:
        if e.kind is EventKind.ELASTIC_FAILURE and e.rank is not None and e.time is not None:
            failed_at[e.rank] = min(failed_at.get(e.rank, e.time), e.time)
    last_time: dict[tuple[str, object], list[tuple[int, float]]] = defaultdict(list)
    for e in events:
        if e.time is not None and not e.time_approx and e.loc.line:
            last_time[_stream(e)].append((e.loc.line, e.time))
    for times in last_time.values():
        times.sort()
    out = []
    for e in events:
        dated = e.kind in _DATED_BY_FAILURE or (e.kind is EventKind.LINE and not e.fields.get("generic"))
        if e.time is None and dated:
            earlier = [t for line, t in last_time.get(_stream(e), []) if e.loc.line and line < e.loc.line]
            if earlier:
                e = replace(
                    e,
                    time=earlier[-1],
                    time_approx=True,
                    fields={**e.fields, "time_from": "the nearest earlier time of its stream"},
                )
            elif e.rank is not None and e.rank in failed_at:
                e = replace(
                    e,
                    time=failed_at[e.rank],
                    time_approx=True,
                    fields={**e.fields, "time_from": "the time torchrun's summary or error.json gives this rank's failure"},
                )
        out.append(e)
    return out
