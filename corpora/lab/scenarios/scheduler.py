"""scheduler: a torchrun job stopped from outside, as a scheduler's time limit or a user's
cancel would: SIGTERM (or SIGINT) to the launcher, or to every process of the job."""

from __future__ import annotations

import os
import signal
import sys
import time

from .. import NotReproduced, Variant
from ._dist import dist_args, run_torchrun
from ._train_common import DIST

NAME = "scheduler"
CATEGORY = "scheduler"
DESCRIPTION = "SIGTERM / SIGINT sent to a running torchrun job (launcher only or whole job)"
NEEDS = ("root", "unshare", "torch")

V = Variant
S = "scheduler.sigterm"
VARIANTS = [
    V(
        "sigterm-launcher-3r-tee-ts",
        S,
        dict(nproc=3, sig="SIGTERM", target="launcher", after_step=4, logging="tee", ts=True),
        first_rank=None,
    ),
    V(
        "sigint-launcher-2r-console-ts",
        S,
        dict(nproc=2, sig="SIGINT", target="launcher", after_step=3, logging="console", ts=True),
        first_rank=None,
    ),
    V(
        "sigterm-all-4r-redirects-ts",
        S,
        dict(nproc=4, sig="SIGTERM", target="all", after_step=3, logging="redirects", ts=True, rdzv="c10d"),
        first_rank=None,
    ),
    V(
        "sigterm-then-sigkill-2r-tee-ts",
        S,
        dict(nproc=2, sig="SIGTERM", target="launcher", after_step=3, logging="tee", ts=True, kill_after=5, ignore_term=False),
        first_rank=None,
    ),
    V("sigterm-python-1proc-ts", S, dict(launcher="python", sig="SIGTERM", after_step=3, ts=True), first_rank=None),
]


def run(ctx, v: Variant):
    p = v.params
    p.setdefault("steps", 400)
    p.setdefault("step_time", 0.3)
    p.setdefault("timeout", 30)
    p.setdefault("fault", "none")
    sig = getattr(signal, p["sig"])

    def during(proc, out_path):
        watch = out_path
        if p.get("logging") == "redirects":
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and not list(ctx.tmp.glob("logs/*/attempt_0/0/stdout.log")):
                time.sleep(0.3)
            found = list(ctx.tmp.glob("logs/*/attempt_0/0/stdout.log"))
            watch = found[0] if found else out_path
        if not ctx.wait_for(proc, rf"step {p['after_step']} loss", 120, path=watch):
            raise NotReproduced(f"the job never reached step {p['after_step']}")
        if p.get("target") == "all":
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        if p.get("kill_after"):
            try:
                proc.wait(timeout=p["kill_after"])
            except Exception:
                os.killpg(proc.pid, signal.SIGKILL)

    if p.get("launcher") == "python":
        ctx.write("train.py", DIST)
        from .. import free_port

        env = ctx.env(LAB_TS="1", RANK=0, LOCAL_RANK=0, WORLD_SIZE=1, MASTER_ADDR="labnode1", MASTER_PORT=free_port())
        res = ctx.run(ctx.ns([sys.executable, "train.py", *dist_args(p)]), timeout=150, env=env, during=during)
        if res.timed_out:
            raise NotReproduced("timed out")
        ctx.save_text("train.log", res.output)
    else:
        res, rc = run_torchrun(ctx, p, timeout=150, during=during)
        if (
            "SignalException" not in res.output
            and "got signal" not in res.output
            and "Received" not in res.output
            and p.get("logging") != "redirects"
        ):
            ctx.notes.append("no SignalException line in the launcher output")
    ctx.notes.append(f"{p['sig']} sent to the {p.get('target', 'process')} after step {p['after_step']}; exit status {res.rc}")
    return {"rank": None, "host": "labnode1"}
