"""healthy: training jobs that run to the end (category none): torchrun on gloo with one to four
agents (each its own host name), per-rank python, torch.multiprocessing.spawn and a plain
single process; DataLoader workers, caught and logged exceptions, the warnings real jobs print
(DataLoader worker count, pin_memory without an accelerator, DDP's unused-parameter check),
c10d's and the elastic agent's INFO chatter.  Nothing fails: every rank logs "training
finished" and every launcher exits 0.  The cases go to corpora/healthy/ (the healthy corpus)."""

from __future__ import annotations

import re
import sys

from .. import NotReproduced, Variant, free_port, need_in
from ._dist import run_torchrun_nodes
from ._train_common import LOGGING

NAME = "healthy"
CATEGORY = "none"
CORPUS = "healthy"
DESCRIPTION = "jobs that finish: torchrun (1-4 nodes), per-rank python, mp.spawn, a single process"
NEEDS = ("root", "unshare", "torch")

#: a small training job that finishes; options add what real healthy jobs print along the way
TRAIN = (
    LOGGING
    + r'''
import argparse, datetime, warnings
import torch
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=12)
ap.add_argument("--epochs", type=int, default=2)
ap.add_argument("--width", type=int, default=32)
ap.add_argument("--timeout", type=int, default=30)
ap.add_argument("--workers", type=int, default=0)        # DataLoader worker processes per rank
ap.add_argument("--pin-memory", action="store_true")
ap.add_argument("--caught", default="none")             # resume | metric | save-retry
ap.add_argument("--unused", action="store_true")        # DDP find_unused_parameters=True (none are unused)
ap.add_argument("--no-dist", action="store_true")       # a single process, no process group
ap.add_argument("--rss", action="store_true")           # log the process's resident memory
ap.add_argument("--amp", action="store_true")           # CUDA mixed precision asked for on a CPU machine
args = ap.parse_args()


class Shard(torch.utils.data.Dataset):
    """a synthetic shard: sample i of rank r is the same on every run"""

    def __init__(self, rank, n):
        self.rank, self.n = rank, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.rank * 100003 + i)
        return torch.randn(args.width, generator=g), int(torch.randint(0, 8, (1,), generator=g))


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def resume(model, path="checkpoints/last.pt"):
    try:
        model.load_state_dict(torch.load(path))
        log.info("resumed from %s", path)
    except FileNotFoundError:
        log.exception("no checkpoint to resume from, starting from scratch")


def metric(out, y):
    if args.caught == "metric":
        try:
            return torch.nn.functional.cross_entropy(out, y.unsqueeze(1)).item()
        except RuntimeError:
            log.exception("eval metric failed, reported as nan")
            return float("nan")
    return (out.argmax(1) == y).float().mean().item()


def save(model, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    for attempt in (1, 2):
        try:
            if args.caught == "save-retry" and attempt == 1:
                torch.save(model.state_dict(), os.path.join(path, "missing-dir", "x.pt"))
            torch.save(model.state_dict(), path)
            log.info("checkpoint saved to %s", path)
            return
        except (OSError, RuntimeError):
            log.warning("saving the checkpoint failed (attempt %d), retrying", attempt, exc_info=True)


def main():
    distributed = not args.no_dist
    if distributed:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
        rank, world = dist.get_rank(), dist.get_world_size()
        log.info("process group ready: rank %d/%d backend gloo on %s", rank, world, os.uname().nodename)
    else:
        rank, world = 0, 1
        log.info("single process on %s", os.uname().nodename)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(args.width, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    if args.caught == "resume":
        resume(model)
    ddp = None
    if distributed:
        ddp = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.unused)
    net = ddp or model
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    scaler = torch.cuda.amp.GradScaler() if args.amp else None
    loader = torch.utils.data.DataLoader(
        Shard(rank, args.steps * 8), batch_size=8, num_workers=args.workers, pin_memory=args.pin_memory
    )
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            if scaler is not None:
                with torch.cuda.amp.autocast():
                    out = net(x)
                    loss = torch.nn.functional.cross_entropy(out, y)
                opt.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                out = net(x)
                loss = torch.nn.functional.cross_entropy(out, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            if step % 4 == 0:
                log.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
        with torch.no_grad():
            x, y = Shard(rank + 1000, 16)[0]
            acc = metric(model(x.unsqueeze(0)), torch.tensor([y]))
        log.info("epoch %d done, eval metric %.4f", epoch, acc)
        if args.rss:
            log.info("epoch %d resident memory %.1f MB", epoch, rss_mb())
    if distributed:
        dist.barrier()
    if rank == 0:
        save(model, "checkpoints/last.pt")
    log.info("training finished")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''
)

SPAWN = r"""
import os, sys
sys.argv = [sys.argv[0], *os.environ["LAB_ARGS"].split()]


def worker(rank, world, port):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="labnode1", MASTER_PORT=str(port))
    import runpy
    runpy.run_path("train.py", run_name="__main__")


if __name__ == "__main__":
    import torch.multiprocessing as mp
    world = int(os.environ["LAB_WORLD"])
    mp.spawn(worker, args=(world, int(os.environ["LAB_PORT"])), nprocs=world, join=True)
    print("all workers finished")
"""

V = Variant


def H(slug: str, **params) -> Variant:
    return Variant(slug, None, params, first_rank=None, first_host=None)


VARIANTS = [
    H("2nodes-2x2-c10d-tee-info", nnodes=2, nproc=2, logging="tee", rdzv="c10d", loglevel="INFO"),
    H("1node-2r-standalone-console", nproc=2, logging="console"),
    H("1node-4r-standalone-tee-ts", nproc=4, logging="tee", ts=True),
    H("1node-3r-c10d-redirects", nproc=3, logging="redirects", rdzv="c10d"),
    H("1node-1r-torchrun-console", nproc=1, logging="console"),
    H("single-process-python", launcher="python1"),
    H("python-per-rank-2r-ts", launcher="python", nproc=2, ts=True),
    H("caught-resume-2r-tee", nproc=2, logging="tee", caught="resume"),
    H("caught-metric-4r-console-ts", nproc=4, logging="console", caught="metric", ts=True),
    H("caught-save-retry-2r-console", nproc=2, logging="console", caught="save-retry"),
    H("dataloader-2workers-2r-tee", nproc=2, logging="tee", workers=2),
    H("dataloader-too-many-workers-2r-console", nproc=2, logging="console", workers=3, expect="suggested max number of worker"),
    H("pin-memory-no-accelerator-1r-workers", nproc=1, logging="console", workers=1, pin_memory=True, expect="pin_memory"),
    H("ddp-unused-params-2r-tee", nproc=2, logging="tee", unused=True, expect="find_unused_parameters"),
    H("2nodes-2x2-static-console", nnodes=2, nproc=2, logging="console", rdzv="static"),
    H("4nodes-4x1-static-tee", nnodes=4, nproc=1, logging="tee", rdzv="static"),
    H(
        "2nodes-2x1-c10d-tee-workers-caught-ts",
        nnodes=2,
        nproc=1,
        logging="tee",
        rdzv="c10d",
        workers=1,
        caught="resume",
        ts=True,
    ),
    H("mpspawn-2p", launcher="mp.spawn", nproc=2),
    H("1node-4r-tee-agent-info", nproc=4, logging="tee", loglevel="INFO"),
    H("1node-2r-c10d-debug-info", nproc=2, logging="console", rdzv="c10d", debug="INFO"),
    H("1node-2r-rss-memory-log-ts", nproc=2, logging="console", rss=True, ts=True),
    H("2nodes-2x2-c10d-console-info-late-join", nnodes=2, nproc=2, logging="console", rdzv="c10d", loglevel="INFO", stagger=8),
    H("cuda-amp-on-cpu-2r-console", nproc=2, logging="console", amp=True, expect="CUDA is not available"),
    H("faulthandler-3r-tee-ts", nproc=3, logging="tee", ts=True, faulthandler=True),
    H("max-restarts-3-2r-agent-info", nproc=2, logging="console", loglevel="INFO", max_restarts=3, rdzv="c10d"),
    H("2nodes-2x1-static-debug-info-tee", nnodes=2, nproc=1, logging="tee", rdzv="static", debug="INFO"),
]


def train_args(p: dict) -> list[str]:
    a = ["--timeout", str(p.get("timeout", 30))]
    if p.get("workers"):
        a += ["--workers", str(p["workers"])]
    if p.get("pin_memory"):
        a.append("--pin-memory")
    if p.get("caught"):
        a += ["--caught", p["caught"]]
    if p.get("unused"):
        a.append("--unused")
    if p.get("rss"):
        a.append("--rss")
    if p.get("amp"):
        a.append("--amp")
    return a


def extra_env(p: dict) -> dict:
    env = {}
    if p.get("loglevel"):
        env["LOGLEVEL"] = p["loglevel"]
    if p.get("debug"):
        env.update(TORCH_DISTRIBUTED_DEBUG=p["debug"], TORCH_CPP_LOG_LEVEL="INFO")
    if p.get("faulthandler"):
        env["PYTHONFAULTHANDLER"] = "1"
    return env


def run(ctx, v: Variant):
    p = v.params
    launcher = p.get("launcher", "torchrun")
    env = ctx.env(LAB_TS="1" if p.get("ts") else "0", **extra_env(p))
    if p.get("nnodes", 1) > 1:
        res = run_torchrun_nodes(ctx, p, TRAIN, train_args(p), timeout=240, extra_env=extra_env(p))
        outs = {h: r for h, r in res.items()}
    elif launcher == "torchrun":
        ctx.write("train.py", TRAIN)
        extra = ("--max-restarts", str(p["max_restarts"])) if p.get("max_restarts") else ()
        launch = ctx.launch(p["nproc"], p.get("logging", "console"), p.get("rdzv", "standalone"), extra=extra)
        cmd = [*launch, "train.py", *train_args(p)]
        r = ctx.run(ctx.ns(cmd), timeout=200, env=env)
        ctx.save_text("console.log", r.output)
        ctx.save_tree("logs", ctx.tmp / "logs")
        outs = {"labnode1": r}
    elif launcher == "python1":
        ctx.write("train.py", TRAIN)
        r = ctx.run(ctx.ns([sys.executable, "train.py", "--no-dist", *train_args(p)]), timeout=200, env=env)
        ctx.save_text("console.log", r.output)
        outs = {"labnode1": r}
    elif launcher == "python":
        ctx.write("train.py", TRAIN)
        port = free_port()
        procs = []
        for rank in range(p["nproc"]):
            e = dict(env, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(p["nproc"]), MASTER_ADDR="labnode1")
            e["MASTER_PORT"] = str(port)
            procs.append(ctx.start(ctx.ns([sys.executable, "train.py", *train_args(p)]), env=e, out_name=f".rank{rank}.out"))
        outs = {}
        for rank, proc in enumerate(procs):
            r = ctx.finish(proc, 200)
            ctx.save_text(f"rank{rank}.log", r.output)
            outs[f"rank{rank}"] = r
    elif launcher == "mp.spawn":
        ctx.write("train.py", TRAIN)
        ctx.write("launch.py", SPAWN)
        env.update(LAB_ARGS=" ".join(train_args(p)), LAB_WORLD=str(p["nproc"]), LAB_PORT=str(free_port()))
        r = ctx.run(ctx.ns([sys.executable, "launch.py"]), timeout=200, env=env)
        ctx.save_text("console.log", r.output)
        outs = {"labnode1": r}
    else:
        raise ValueError(launcher)
    for name, r in outs.items():
        if r.timed_out or r.rc != 0:
            raise NotReproduced(f"{name}: exit status {r.rc}{' (timed out)' if r.timed_out else ''}:\n" + r.output[-3000:])
    text = "\n".join(b.decode(errors="replace") for b in ctx.saved.values())
    world = p.get("nnodes", 1) * p.get("nproc", 1)
    if len(re.findall(r"training finished", text)) < world:
        raise NotReproduced(f"fewer than {world} ranks logged 'training finished'")
    if not p.get("caught") and "Traceback" in text:
        raise NotReproduced("a traceback was printed")
    if p.get("caught"):
        need_in(text, r"Traceback")
    if p.get("expect"):  # the warning this variant is about was really printed
        need_in(text, p["expect"])
    ctx.notes.append("every rank logged 'training finished'; every launcher exited 0")
    return None
