"""hang: a torchrun job on gloo where one rank skips a collective, issues another one, or stops
making progress; the others time out (short timeout via init_process_group(timeout=...)).
With TORCH_DISTRIBUTED_DEBUG=DETAIL the mismatch is reported by torch itself (those variants
average gradients with explicit all_reduce: on torch 2.13 CPU, DDP's constructor segfaults
under DETAIL, which is not the failure these cases are about)."""

from __future__ import annotations

import re

from .. import NotReproduced, Variant, need_in, root_cause
from ._dist import run_torchrun, run_torchrun_nodes

NAME = "hang"
CATEGORY = "hang"
DESCRIPTION = "mismatched / skipped collectives or a stuck rank on gloo, short timeouts"
NEEDS = ("root", "unshare", "torch")

V = Variant
T = "hang.collective_timeout"
M = "hang.collective_mismatch"
VARIANTS = [
    V(
        "skip-allreduce-4r-rank1-tee-20s",
        T,
        dict(nproc=4, fault="skip", fault_rank=1, at_step=3, timeout=20, logging="tee"),
        first_rank=1,
    ),
    V(
        "stuck-rank-2r-rank0-console-ts-25s",
        T,
        dict(nproc=2, fault="stuck", fault_rank=0, at_step=2, timeout=25, logging="console", ts=True),
        first_rank=0,
    ),
    V(
        "extra-broadcast-3r-rank2-redirects-20s",
        M,
        dict(nproc=3, fault="extra", fault_rank=2, at_step=2, timeout=20, logging="redirects", rdzv="c10d"),
        first_rank=2,
    ),
    V(
        "size-mismatch-2r-rank1-tee-ts-20s",
        M,
        dict(nproc=2, fault="size", fault_rank=1, at_step=2, timeout=20, logging="tee", ts=True),
        first_rank=1,
    ),
    V(
        "gather-vs-allreduce-4r-rank3-detail-20s",
        M,
        dict(
            nproc=4, fault="gather", fault_rank=3, at_step=1, timeout=20, logging="tee", debug="DETAIL", rdzv="c10d", no_ddp=True
        ),
        first_rank=3,
    ),
    V(
        "skip-allreduce-3r-rank2-detail-console-20s",
        M,
        dict(nproc=3, fault="skip", fault_rank=2, at_step=2, timeout=20, logging="console", debug="DETAIL", no_ddp=True),
        first_rank=2,
    ),
    V(
        "dataload-stall-2nodes-2x2-rank2-tee-10s",
        T,
        dict(nnodes=2, nproc=2, fault="dataload", fault_rank=2, at_step=3, timeout=10, logging="tee", rdzv="static"),
        first_rank=2,
        first_host="labnode2",
    ),
]


def run(ctx, v: Variant):
    p = v.params
    if p.get("nnodes", 1) > 1:
        return run_nodes(ctx, v)
    env = {"TORCH_DISTRIBUTED_DEBUG": p["debug"]} if p.get("debug") else None
    res, rc = run_torchrun(ctx, p, timeout=200, extra_env=env)
    text = "\n".join(b.decode(errors="replace") for b in ctx.saved.values())
    need_in(text, r"(?i)timed out|timeout|mismatch|Connection closed|Connection reset")
    ctx.notes.append(f"launcher exit status {res.rc}; torchrun's first observed failure: {rc}")
    # the true first failure is the rank that did the wrong thing, whatever torchrun saw first
    return {"rank": v.first_rank, "host": "labnode1"}


def run_nodes(ctx, v: Variant):
    """Two torchrun agents (labnode1, labnode2; static rendezvous, so node N runs global ranks
    N*nproc ..): the stalled rank's peers time out in the gradient all-reduce, and the agent of
    the stalled rank's node then stops it with SIGTERM."""
    p = v.params
    res = run_torchrun_nodes(ctx, p, timeout=240)
    text = "\n".join(b.decode(errors="replace") for b in ctx.saved.values())
    need_in(text, r"Timed out waiting|timed out|Connection closed by peer", r"loading shard")
    host = v.first_host
    local = v.first_rank - (int(host.removeprefix("labnode")) - 1) * p["nproc"]
    console = res[host].output
    # the stalled rank did not fail by itself: its agent stopped it (SIGTERM) after a peer failed
    need_in(console, rf"\[default{local}\]:.*loading shard", r"SIGTERM")
    if re.search(rf"\[default{local}\]:.*(Timed out|Traceback)", console):
        raise NotReproduced(f"the stalled rank {v.first_rank} failed by itself")
    for h, r in res.items():
        ctx.notes.append(f"{h}: launcher exit status {r.rc}, torchrun's first observed failure: {root_cause(r.output)}")
    ctx.notes.append(
        f"rank {v.first_rank} (local rank {local} on {host}) stalled in data loading; the others timed out in the all-reduce"
    )
    return {"rank": v.first_rank, "host": host, "local_rank": local}
