"""oom_cascade: a torchrun job on gloo (CPU) where one rank runs into a memory cgroup's limit
and the kernel OOM killer kills it (SIGKILL); the other ranks then fail on their collectives
or are torn down by the launcher.

Kept: the kernel's own lines taken with `dmesg` before/after (only the new ones), torchrun's
"Signal 9 (SIGKILL)" / exitcode -9 summary, and the other ranks' gloo errors.
The victim rank writes its own pid into the cgroup's cgroup.procs when it starts (cgroup v2:
memory.max + memory.swap.max=0; cgroup v1: memory.limit_in_bytes + memsw).
"""

from __future__ import annotations

import re
import sys

from .. import DmesgWindow, MemCgroup, NotReproduced, Variant, need_in, root_cause
from ._dist import run_torchrun_nodes
from ._train_common import LOGGING

NAME = "oom_cascade"
CATEGORY = "oom_cascade"
DESCRIPTION = "one rank of a gloo torchrun job killed by a memory cgroup's OOM killer"
NEEDS = ("root", "unshare", "cgroup", "dmesg", "torch")

TRAIN = (
    LOGGING
    + r"""
import argparse, datetime
import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

ap = argparse.ArgumentParser()
ap.add_argument("--victim", type=int, default=1)
ap.add_argument("--at-step", type=int, default=3)
ap.add_argument("--pattern", default="spike")   # spike: one huge batch; leak: growing cache
ap.add_argument("--timeout", type=int, default=20)
ap.add_argument("--steps", type=int, default=30)
args = ap.parse_args()


def join_memory_cgroup():
    procs = os.environ.get("LAB_CGROUP_PROCS")
    if procs and int(os.environ["RANK"]) == args.victim:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))


@record
def main():
    join_memory_cgroup()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info("process group ready: rank %d/%d, timeout %ds", rank, world, args.timeout)
    torch.manual_seed(rank)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    cache = []
    for step in range(args.steps):
        seq = 16
        if rank == args.victim and step >= args.at_step:
            if args.pattern == "spike":
                seq = 1 << 22          # one very long sample on this rank
            else:
                cache.append(torch.randn(16, 1 << 20))   # 64 MB kept per step
        x = torch.randn(seq, 64)
        y = torch.randint(0, 8, (seq,))
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.info("step %d loss %.4f (batch %d)", step, loss.item(), seq)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""
)

SPAWN = (
    LOGGING
    + r"""
import datetime
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

VICTIM = int(os.environ["LAB_VICTIM"])


def worker(rank, world):
    if rank == VICTIM:
        with open(os.environ["LAB_CGROUP_PROCS"], "w") as f:
            f.write(str(os.getpid()))
    os.environ["MASTER_ADDR"] = "labnode1"
    os.environ["MASTER_PORT"] = os.environ["LAB_PORT"]
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=int(os.environ["LAB_TIMEOUT"])))
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hoard = []
    for step in range(30):
        if rank == VICTIM and step >= 2:
            hoard.append(torch.ones(1 << 24))      # 64 MB per step, never freed
        loss = model(torch.randn(16, 64)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(os.environ["LAB_WORLD"])
    mp.spawn(worker, args=(world,), nprocs=world, join=True)
"""
)

V = Variant
VARIANTS = [
    V(
        "spike-4r-victim1-tee-20s",
        "oom_cascade.host_oom_kill",
        dict(nproc=4, victim=1, pattern="spike", timeout=20, logging="tee", limit_mb=256, dmesg="raw"),
        first_rank=1,
    ),
    V(
        "leak-4r-victim3-redirects-30s-ts",
        "oom_cascade.host_oom_kill",
        dict(
            nproc=4, victim=3, pattern="leak", timeout=30, logging="redirects", limit_mb=200, dmesg="human", ts=True, rdzv="c10d"
        ),
        first_rank=3,
    ),
    V(
        "spike-3r-victim0-console-ts",
        "oom_cascade.host_oom_kill",
        dict(nproc=3, victim=0, pattern="spike", timeout=20, logging="console", limit_mb=300, dmesg="raw", ts=True, rdzv="c10d"),
        first_rank=0,
    ),
    V(
        "leak-2nodes-2x2-victim3-tee",
        "oom_cascade.host_oom_kill",
        dict(nnodes=2, nproc=2, victim=3, pattern="leak", timeout=25, logging="tee", limit_mb=256, dmesg="raw"),
        first_rank=3,
        first_host="labnode2",
    ),
    V(
        "leak-mpspawn-4p-victim2",
        "oom_cascade.host_oom_kill",
        dict(launcher="mp.spawn", world=4, victim=2, timeout=20, limit_mb=200, dmesg="human"),
        first_rank=2,
    ),
    V(
        "spike-2r-victim1-console-nodmesg",
        "oom_cascade.sigkill",
        dict(nproc=2, victim=1, pattern="spike", timeout=20, logging="console", limit_mb=256, dmesg=None),
        first_rank=1,
    ),
    V(
        "leak-4nodes-4x2-victim5-node2-tee-static",
        "oom_cascade.host_oom_kill",
        dict(nnodes=4, nproc=2, victim=5, pattern="leak", timeout=15, logging="tee", limit_mb=256, dmesg="raw", rdzv="static"),
        first_rank=5,
        first_host="labnode3",
    ),
]


def run(ctx, v: Variant):
    p = v.params
    cg = MemCgroup(f"pmlab-oom-{v.slug[:20]}", p["limit_mb"] << 20)
    ctx.cleanups.append(cg.cleanup)
    ctx.notes.append(f"memory cgroup {cg.kind}: limit {p['limit_mb']} MB, no swap, victim rank {p['victim']} joined it at start")
    extra = {"LAB_CGROUP_PROCS": str(cg.procs)}
    env = ctx.env(LAB_TS="1" if p.get("ts") else "0", **extra)
    dm = DmesgWindow()
    targs = ["--victim", str(p["victim"]), "--timeout", str(p["timeout"])]
    if p.get("launcher") == "mp.spawn":
        ctx.write("train.py", SPAWN)
        from .. import free_port

        env.update(
            LAB_VICTIM=str(p["victim"]), LAB_WORLD=str(p["world"]), LAB_PORT=str(free_port()), LAB_TIMEOUT=str(p["timeout"])
        )
        res = ctx.run(ctx.ns([sys.executable, "train.py"]), timeout=150, env=env)
        outs = {"console.log": res.output}
        ff = {"rank": v.first_rank, "host": v.first_host}
    elif p.get("rdzv") == "static" and p.get("nnodes", 1) > 1:
        # static rendezvous: node N (labnode<N+1>) runs global ranks N*nproc .. N*nproc+nproc-1
        res = run_torchrun_nodes(ctx, p, TRAIN, [*targs, "--pattern", p["pattern"]], timeout=240, extra_env=extra)
        outs = {f"{h}/console.log": r.output for h, r in res.items()}
        local = p["victim"] % p["nproc"]
        host = f"labnode{p['victim'] // p['nproc'] + 1}"
        if host != v.first_host:
            raise NotReproduced(f"victim rank {p['victim']} is on {host}, the variant says {v.first_host}")
        need_in(res[host].output, rf"rank\s*:\s*{p['victim']} \(local_rank: {local}\)", r"exitcode\s*:\s*-9")
        ff = {"rank": p["victim"], "host": host, "local_rank": local}
        ctx.notes.append(
            f"the victim is global rank {p['victim']}, local rank {local} on {host} (node index {p['victim'] // p['nproc']})"
        )
    elif p.get("nnodes", 1) > 1:
        ctx.write("train.py", TRAIN)
        procs = []
        for node in range(p["nnodes"]):
            host = f"labnode{node + 1}"
            (ctx.tmp / host).mkdir()
            ctx.write(f"{host}/train.py", TRAIN)
            cmd = [
                *ctx.launch(p["nproc"], p["logging"], "c10d", nnodes=p["nnodes"], node_rank=node),
                "train.py",
                *targs,
                "--pattern",
                p["pattern"],
            ]
            procs.append((host, ctx.start(ctx.ns(cmd, hostname=host), env=env, cwd=ctx.tmp / host)))
        outs = {}
        for host, proc in procs:
            r = ctx.finish(proc, timeout=180)
            if r.timed_out:
                raise NotReproduced(f"{host} timed out:\n" + r.output[-2000:])
            outs[f"{host}/console.log"] = r.output
            ctx.save_tree(f"{host}/logs", ctx.tmp / host / "logs")
        # with c10d rendezvous, which agent gets which ranks is decided at run time
        killed = [h for h, (name, text) in zip([h for h, _ in procs], outs.items()) if re.search(r"exitcode\s*:\s*-9", text)]
        if len(killed) != 1:
            raise NotReproduced(f"expected one host with the -9 rank, got {killed}")
        ff = {"rank": v.first_rank, "host": killed[0]}
        ctx.notes.append(f"the victim rank {v.first_rank} ran on {killed[0]}")
    else:
        ctx.write("train.py", TRAIN)
        cmd = [*ctx.launch(p["nproc"], p["logging"], p.get("rdzv", "standalone")), "train.py", *targs, "--pattern", p["pattern"]]
        res = ctx.run(ctx.ns(cmd), timeout=150, env=env)
        if res.timed_out:
            raise NotReproduced("timed out:\n" + res.output[-2000:])
        outs = {"console.log": res.output}
        ff = root_cause(res.output) or {"rank": v.first_rank, "host": v.first_host}
        if ff["rank"] != v.first_rank:
            raise NotReproduced(f"first failure is rank {ff['rank']}, expected {v.first_rank}")
        ctx.save_tree("logs", ctx.tmp / "logs")
    kern = dm.new_lines(human=p.get("dmesg") == "human")
    kern_text = "\n".join(kern) + "\n"
    need_in(kern_text, r"(Memory cgroup out of memory|oom-kill).*")
    need_in("\n".join(outs.values()), r"SIGKILL|exitcode\s*:\s*-9|signal 9")
    for name, text in outs.items():
        ctx.save_text(name, text)
    if p.get("dmesg"):
        where = f"{ff['host']}/" if p.get("nnodes", 1) > 1 else ""
        ctx.save_text(f"{where}dmesg.log" if p["dmesg"] == "raw" else f"{where}dmesg-T.log", kern_text)
    else:
        ctx.notes.append("the kernel log is deliberately not kept (a job that saved no dmesg)")
    return ff
