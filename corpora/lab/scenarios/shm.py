"""shm: DataLoader workers (and a training process) moving tensors through /dev/shm while
/dev/shm is a 1 MB tmpfs in a private mount namespace.

Real outputs: torch's "unable to allocate shared memory(shm) for file </torch_...>: No space
left on device", the worker's "Unexpected bus error encountered in worker", "DataLoader worker
(pid X) is killed by signal: Bus error", faulthandler's "Fatal Python error: Bus error", the
launcher's ChildFailedError, and the gdb view of a SIGBUS core whose fault is in /dev/shm.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .. import NotReproduced, Variant, free_port, gdb_core_text, need_in, require_root_cause
from ._train_common import LOGGING

NAME = "shm"
CATEGORY = "shm"
DESCRIPTION = "DataLoader / training process using a 1 MB /dev/shm (unshare -m + tmpfs)"
NEEDS = ("root", "unshare", "torch")

TRAIN = (
    LOGGING
    + r'''
import argparse
import numpy as np
import torch
import torch.distributed as dist
from multiprocessing import shared_memory
from torch.utils.data import DataLoader, Dataset
from torch.distributed.elastic.multiprocessing.errors import record

ap = argparse.ArgumentParser()
ap.add_argument("--mode", default="torch")          # torch | busworker | busmain | memmap
ap.add_argument("--workers", type=int, default=2)
ap.add_argument("--rows", type=int, default=256)
ap.add_argument("--cols", type=int, default=1024)
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--faulthandler", action="store_true")
ap.add_argument("--no-record", action="store_true")   # @record enables faulthandler itself
ap.add_argument("--strategy", default=None)
args = ap.parse_args()
if args.faulthandler:
    import faulthandler
    faulthandler.enable()
if args.strategy:
    torch.multiprocessing.set_sharing_strategy(args.strategy)


class Shards(Dataset):
    """Synthetic samples; in 'busworker' mode each sample is staged in a shared-memory buffer
    (as a shared cache would do) before it is returned."""

    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        if args.mode == "busworker":
            shm = shared_memory.SharedMemory(create=True, size=args.rows * args.cols * 4)
            try:
                a = np.ndarray((args.rows, args.cols), dtype=np.float32, buffer=shm.buf)
                a[:] = np.random.rand(args.rows, args.cols)
                t = torch.from_numpy(a.copy())
                del a
            finally:
                shm.close()
                shm.unlink()
            return t, i % 10
        return torch.randn(args.rows, args.cols), i % 10


def stage_in_shm(x):
    """Main-process staging buffer for a batch in /dev/shm (a replay / prefetch buffer)."""
    if args.mode == "memmap":
        path = f"/dev/shm/stage_rank{RANK}.bin"
        m = np.memmap(path, dtype=np.float32, mode="w+", shape=tuple(x.shape))
        m[:] = x.numpy()
        return m
    shm = shared_memory.SharedMemory(create=True, size=x.numel() * 4)
    a = np.ndarray(tuple(x.shape), dtype=np.float32, buffer=shm.buf)
    a[:] = x.numpy()
    return shm


def main():
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
        log.info("initialized process group: rank %d of %d", dist.get_rank(), dist.get_world_size())
    model = torch.nn.Sequential(torch.nn.Linear(args.cols, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10))
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    dl = DataLoader(Shards(), batch_size=args.batch, num_workers=args.workers, shuffle=True)
    log.info("starting training: %d DataLoader workers, batch %d x %d x %d float32",
             args.workers, args.batch, args.rows, args.cols)
    staged = []
    for step, (x, y) in enumerate(dl):
        if args.mode in ("busmain", "memmap"):
            staged.append(stage_in_shm(x))
        out = model(x).mean(dim=1)
        loss = torch.nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.info("step %d loss %.4f", step, loss.item())
        if step + 1 >= args.steps:
            break
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    (main if args.no_record else record(main))()
'''
)

SPAWN = (
    LOGGING
    + r"""
import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset

WORKERS = int(os.environ["LAB_WORKERS"])
ROWS = int(os.environ["LAB_ROWS"])


class Shards(Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        return torch.randn(ROWS, 1024), i % 10


def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ["LAB_PORT"]
    dist.init_process_group("gloo", rank=rank, world_size=world)
    print(f"rank {rank}: process group ready", flush=True)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1024, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    dl = DataLoader(Shards(), batch_size=4, num_workers=WORKERS)
    for step, (x, y) in enumerate(dl):
        loss = torch.nn.functional.cross_entropy(model(x).mean(dim=1), y)
        opt.zero_grad(); loss.backward(); opt.step()
        print(f"rank {rank}: step {step} loss {loss.item():.4f}", flush=True)
        if step >= 20:
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(os.environ["LAB_WORLD"])
    mp.spawn(worker, args=(world,), nprocs=world, join=True)
"""
)

V = Variant
VARIANTS = [
    V(
        "dl-enospc-plain-2w",
        "shm.shm_alloc_failed",
        dict(launcher="python", mode="torch", workers=2, rows=256, cols=1024, batch=4, shm="1m"),
    ),
    V(
        "dl-enospc-plain-4w-ts-file_system",
        "shm.shm_alloc_failed",
        dict(launcher="python", mode="torch", workers=4, rows=128, cols=1024, batch=8, shm="1m", strategy="file_system", ts=True),
    ),
    V(
        "dl-buserror-plain-2w",
        "shm.dataloader_bus_error",
        dict(launcher="python", mode="busworker", workers=2, rows=512, cols=1024, batch=2, shm="1m", no_record=True),
    ),
    V(
        "dl-buserror-plain-3w-faulthandler-ts",
        "shm.dataloader_bus_error",
        dict(launcher="python", mode="busworker", workers=3, rows=512, cols=1024, batch=2, shm="1m", faulthandler=True, ts=True),
    ),
    V(
        "dl-buserror-torchrun-2r-tee",
        "shm.dataloader_bus_error",
        dict(
            launcher="torchrun",
            nproc=2,
            logging="tee",
            rdzv="c10d",
            mode="busworker",
            workers=2,
            rows=512,
            cols=1024,
            batch=2,
            shm="1m",
        ),
    ),
    V(
        "dl-enospc-torchrun-4r-redirects-ts",
        "shm.shm_alloc_failed",
        dict(
            launcher="torchrun",
            nproc=4,
            logging="redirects",
            rdzv="c10d",
            mode="torch",
            workers=2,
            rows=256,
            cols=1024,
            batch=4,
            shm="1m",
            ts=True,
        ),
    ),
    V(
        "dl-enospc-torchrun-3r-console",
        "shm.shm_alloc_failed",
        dict(launcher="torchrun", nproc=3, logging="console", mode="torch", workers=1, rows=512, cols=512, batch=4, shm="1m"),
    ),
    V(
        "main-sigbus-torchrun-3r-faulthandler-tee-ts",
        "shm.sigbus",
        dict(
            launcher="torchrun",
            nproc=3,
            logging="tee",
            mode="busmain",
            workers=0,
            rows=128,
            cols=1024,
            batch=4,
            shm="1m",
            faulthandler=True,
            ts=True,
        ),
        first_rank=None,
    ),
    V(
        "main-sigbus-torchrun-2r-redirects",
        "shm.sigbus",
        dict(
            launcher="torchrun",
            nproc=2,
            logging="redirects",
            rdzv="c10d",
            mode="memmap",
            workers=0,
            rows=256,
            cols=1024,
            batch=2,
            shm="1m",
            no_record=True,
        ),
        first_rank=None,
    ),
    V(
        "main-sigbus-plain-core-gdb",
        "shm.sigbus",
        dict(launcher="python", mode="memmap", workers=0, rows=256, cols=1024, batch=2, shm="1m", core=True),
        needs=("gdb",),
    ),
    V("dl-enospc-mpspawn-2p", "shm.shm_alloc_failed", dict(launcher="mp.spawn", world=2, workers=2, rows=256, shm="1m")),
]


def _logging_args(mode: str) -> list[str]:
    if mode == "tee":
        return ["--log-dir", "logs", "--tee", "3"]
    if mode == "redirects":
        return ["--log-dir", "logs", "--redirects", "3"]
    return []


def run(ctx, v: Variant):
    p = v.params
    env = ctx.env(LAB_TS="1" if p.get("ts") else "0")
    if p["launcher"] == "mp.spawn":
        ctx.write("train.py", SPAWN)
        env.update(LAB_WORKERS=str(p["workers"]), LAB_ROWS=str(p["rows"]), LAB_WORLD=str(p["world"]), LAB_PORT=str(free_port()))
        cmd = [sys.executable, "train.py"]
    else:
        ctx.write("train.py", TRAIN)
        targs = [
            "--mode",
            p["mode"],
            "--workers",
            str(p["workers"]),
            "--rows",
            str(p["rows"]),
            "--cols",
            str(p["cols"]),
            "--batch",
            str(p["batch"]),
        ]
        if p.get("faulthandler"):
            targs.append("--faulthandler")
        if p.get("strategy"):
            targs += ["--strategy", p["strategy"]]
        if p.get("no_record"):
            targs.append("--no-record")
        if p["launcher"] == "torchrun":
            cmd = [*ctx.launch(p["nproc"], p.get("logging", "console"), p.get("rdzv", "standalone")), "train.py", *targs]
        else:
            cmd = [sys.executable, "train.py", *targs]
    res = ctx.run(ctx.ns(cmd, shm_size=p["shm"]), timeout=120, env=env, core=bool(p.get("core")))
    if res.timed_out:
        raise NotReproduced("timed out; last output:\n" + res.output[-2000:])
    out = res.output
    need_in(out, r"Bus error|No space left on device|unable to (allocate|write)|SIGBUS")
    ctx.save_text("console.log", out)
    ctx.save_tree("logs", ctx.tmp / "logs")
    ctx.notes.append(f"exit status of the launcher: {res.rc}")
    ctx.notes.append("/dev/shm was a 1 MB tmpfs (private mount namespace)")
    ff = {"rank": v.first_rank, "host": v.first_host}
    if p["launcher"] == "torchrun":
        ff = require_root_cause(out)
    if p.get("core"):
        cores = sorted(ctx.tmp.glob("core*"))
        if not cores:
            raise NotReproduced(
                "no core file was written (core_pattern: " + Path("/proc/sys/kernel/core_pattern").read_text().strip() + ")"
            )
        core = cores[0]
        size = core.stat().st_size
        bt = gdb_core_text(os.path.realpath(sys.executable), core)
        need_in(bt, r"SIGBUS")
        ctx.save_text("gdb-backtrace.txt", bt)
        ctx.extra_provenance["core"] = {
            "file": core.name,
            "size_bytes": size,
            "kept": False,
            "signal": "SIGBUS",
            "note": "core not kept (too large); gdb-backtrace.txt has `thread apply all bt` and `info proc mappings`",
        }
    return ff
