"""user_code: an exception in one rank's training step under torchrun (gloo, CPU); the other
ranks then fail on their next collective or are torn down by the launcher."""

from __future__ import annotations

from .. import NotReproduced, Variant, need_in
from ._dist import run_python_ranks, run_torchrun

NAME = "user_code"
CATEGORY = "user_code"
DESCRIPTION = "a Python exception in one rank's training step (torchrun / per-rank python, gloo)"
NEEDS = ("root", "unshare", "torch")

V = Variant
P = "user_code.python_exception"
VARIANTS = [
    V("valueerror-4r-rank2-tee", P, dict(nproc=4, fault="valueerror", fault_rank=2, at_step=3, logging="tee"), first_rank=2),
    V(
        "indexerror-2r-rank1-redirects-ts",
        P,
        dict(nproc=2, fault="indexerror", fault_rank=1, at_step=2, logging="redirects", ts=True, rdzv="c10d"),
        first_rank=1,
    ),
    V("keyerror-3r-rank0-console", P, dict(nproc=3, fault="keyerror", fault_rank=0, at_step=4, logging="console"), first_rank=0),
    V(
        "shape-4r-rank3-tee-ts",
        P,
        dict(nproc=4, fault="shape", fault_rank=3, at_step=1, logging="tee", ts=True, rdzv="c10d"),
        first_rank=3,
    ),
    V(
        "zerodiv-2r-rank0-console-norecord",
        P,
        dict(nproc=2, fault="zerodiv", fault_rank=0, at_step=2, logging="console", no_record=True),
        first_rank=0,
    ),
    V(
        "valueerror-3r-rank1-python-per-rank-ts",
        P,
        dict(launcher="python", nproc=3, fault="valueerror", fault_rank=1, at_step=2, ts=True, timeout=20),
        first_rank=1,
    ),
]

_EXC = {
    "valueerror": "ValueError",
    "indexerror": "IndexError",
    "keyerror": "KeyError",
    "shape": "RuntimeError: mat1 and mat2 shapes cannot be multiplied",
    "zerodiv": "ZeroDivisionError",
}


def run(ctx, v: Variant):
    p = v.params
    if p.get("launcher") == "python":
        results = run_python_ranks(ctx, p)
        need_in("\n".join(r.output for r in results), _EXC[p["fault"]])
        return {"rank": v.first_rank, "host": v.first_host}
    res, rc = run_torchrun(ctx, p)
    need_in(res.output + "\n".join(ctx.saved.get(k, b"").decode() for k in ctx.saved), _EXC[p["fault"]])
    if rc is None or rc["rank"] != v.first_rank:
        raise NotReproduced(f"torchrun's root cause is {rc}, expected rank {v.first_rank}")
    return rc
