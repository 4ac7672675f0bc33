"""Run the shared DIST training script (see _train_common.py) under torchrun, mp-free."""

from __future__ import annotations

import sys
import time

from .. import NotReproduced, root_cause
from ._train_common import DIST


def dist_args(p: dict) -> list[str]:
    a = [
        "--fault",
        p.get("fault", "none"),
        "--fault-rank",
        str(p.get("fault_rank", 1)),
        "--at-step",
        str(p.get("at_step", 3)),
        "--timeout",
        str(p.get("timeout", 20)),
    ]
    if p.get("steps"):
        a += ["--steps", str(p["steps"])]
    if p.get("step_time"):
        a += ["--step-time", str(p["step_time"])]
    if p.get("no_record"):
        a.append("--no-record")
    if p.get("no_ddp"):
        a.append("--no-ddp")
    return a


def run_torchrun(ctx, p: dict, *, timeout: float = 150, during=None, extra_env: dict | None = None):
    """One torchrun agent on labnode1; returns (Result, root_cause dict or None)."""
    ctx.write("train.py", DIST)
    env = ctx.env(LAB_TS="1" if p.get("ts") else "0", **(extra_env or {}))
    cmd = [*ctx.launch(p["nproc"], p.get("logging", "console"), p.get("rdzv", "standalone")), "train.py", *dist_args(p)]
    res = ctx.run(ctx.ns(cmd), timeout=timeout, env=env, during=during)
    if res.timed_out:
        raise NotReproduced("timed out:\n" + res.output[-3000:])
    ctx.save_text(p.get("console_name", "console.log"), res.output)
    ctx.save_tree("logs", ctx.tmp / "logs")
    return res, root_cause(res.output)


def run_python_ranks(ctx, p: dict, *, timeout: float = 150, env_per_rank=None):
    """Plain `python train.py` per rank (as a scheduler that starts one task per rank does),
    each rank's console in rank<N>.log."""
    from .. import free_port

    ctx.write("train.py", DIST)
    port = free_port()
    procs = []
    for r in range(p["nproc"]):
        env = ctx.env(
            LAB_TS="1" if p.get("ts") else "0",
            RANK=r,
            LOCAL_RANK=r,
            WORLD_SIZE=p["nproc"],
            MASTER_ADDR="labnode1",
            MASTER_PORT=port,
        )
        if env_per_rank:
            env.update({k: str(v) for k, v in env_per_rank(r, port).items()})
        procs.append(ctx.start(ctx.ns([sys.executable, "train.py", *dist_args(p)]), env=env, out_name=f".rank{r}.out"))
    results = [ctx.finish(pr, timeout) for pr in procs]
    for r, res in enumerate(results):
        if res.timed_out:
            raise NotReproduced(f"rank {r} timed out:\n" + res.output[-2000:])
        ctx.save_text(f"rank{r}.log", res.output)
    return results


def run_torchrun_nodes(
    ctx,
    p: dict,
    script: str = DIST,
    script_args: list[str] | None = None,
    *,
    timeout: float = 240,
    extra_env: dict | None = None,
    allow_timeout: bool = False,
):
    """One torchrun agent per node (labnode1..N), each in its own UTS + mount namespace with its
    own host name and job dir (/job/labnodeN), rendezvous on labnode1 (c10d, or static with
    --node-rank).  Saves labnodeN/console.log and labnodeN/logs/ (with --log-dir).  Returns
    {host: Result}."""
    nnodes = p["nnodes"]
    rdzv = p.get("rdzv", "c10d")
    env = ctx.env(LAB_TS="1" if p.get("ts") else "0", **(extra_env or {}))
    args = dist_args(p) if script_args is None else script_args
    procs = []
    for node in range(nnodes):
        host = f"labnode{node + 1}"
        (ctx.tmp / host).mkdir(exist_ok=True)
        ctx.write(f"{host}/train.py", script)
        cmd = [*ctx.launch(p["nproc"], p.get("logging", "tee"), rdzv, nnodes=nnodes, node_rank=node), "train.py", *args]
        if node and p.get("stagger"):
            time.sleep(p["stagger"])  # this node's agent joins the rendezvous late
        procs.append((host, ctx.start(ctx.ns(cmd, hostname=host), env=env, cwd=ctx.tmp / host, out_name=f".{host}.out")))
    results = {}
    for host, proc in procs:
        r = ctx.finish(proc, timeout=timeout)
        if r.timed_out and not allow_timeout:
            for _, other in procs:
                _ = ctx.finish(other, timeout=1)
            raise NotReproduced(f"{host} timed out:\n" + r.output[-3000:])
        results[host] = r
        ctx.save_text(f"{host}/{p.get('console_name', 'console.log')}", r.output)
        ctx.save_tree(f"{host}/logs", ctx.tmp / host / "logs")
    return results
