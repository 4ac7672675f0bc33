"""hang: a torchrun job on gloo where one rank skips a collective, issues another one, or stops
making progress; the others time out (short timeout via init_process_group(timeout=...)).
With TORCH_DISTRIBUTED_DEBUG=DETAIL the mismatch is reported by torch itself (those variants
average gradients with explicit all_reduce: on torch 2.13 CPU, DDP's constructor segfaults
under DETAIL, which is not the failure these cases are about)."""

from __future__ import annotations

from .. import Variant, need_in
from ._dist import run_torchrun

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
]


def run(ctx, v: Variant):
    p = v.params
    env = {"TORCH_DISTRIBUTED_DEBUG": p["debug"]} if p.get("debug") else None
    res, rc = run_torchrun(ctx, p, timeout=200, extra_env=env)
    text = "\n".join(b.decode(errors="replace") for b in ctx.saved.values())
    need_in(text, r"(?i)timed out|timeout|mismatch|Connection closed|Connection reset")
    ctx.notes.append(f"launcher exit status {res.rc}; torchrun's first observed failure: {rc}")
    # the true first failure is the rank that did the wrong thing, whatever torchrun saw first
    return {"rank": v.first_rank, "host": "labnode1"}
