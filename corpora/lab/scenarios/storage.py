"""storage: failures of a regular filesystem (not /dev/shm).

- SIGBUS from reading a mmapped dataset file (numpy memmap / mmap) that another process
  truncates while the job reads it: the process dies with Bus error / exit -7.
- ENOSPC while saving a checkpoint with torch.save onto a small tmpfs mounted at the
  checkpoint directory in a private mount namespace.
"""

from __future__ import annotations

import os
import sys

from .. import NotReproduced, Variant, gdb_core_text, need_in, require_root_cause
from ._train_common import LOGGING

NAME = "storage"
CATEGORY = "storage"
DESCRIPTION = "truncated mmapped dataset (SIGBUS) and checkpoint ENOSPC on a small tmpfs"
NEEDS = ("root", "unshare", "torch")

TRAIN = (
    LOGGING
    + r"""
import argparse, mmap, datetime
import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

ap = argparse.ArgumentParser()
ap.add_argument("--mode", default="memmap")        # memmap | mmap | save | save-legacy | save-np
ap.add_argument("--data", default="data/train.bin")
ap.add_argument("--ckpt", default="ckpt")
ap.add_argument("--hidden", type=int, default=1024)
ap.add_argument("--faulthandler", action="store_true")
ap.add_argument("--no-record", action="store_true")   # @record enables faulthandler itself
ap.add_argument("--timeout", type=int, default=20)
args = ap.parse_args()
if args.faulthandler:
    import faulthandler
    faulthandler.enable()

ROW = 4096   # float32 values per sample (16 KiB)


def samples():
    if args.mode == "mmap":
        f = open(args.data, "rb")
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        n = len(mm) // (ROW * 4)
        for i in range(n):
            yield np.frombuffer(mm[i * ROW * 4:(i + 1) * ROW * 4], dtype=np.float32)
    else:
        arr = np.memmap(args.data, dtype=np.float32, mode="r").reshape(-1, ROW)
        for i in range(arr.shape[0]):
            yield np.array(arr[i])


def main():
    distributed = "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1
    if distributed:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
        log.info("process group ready: rank %d of %d", dist.get_rank(), dist.get_world_size())
    model = torch.nn.Sequential(torch.nn.Linear(ROW if args.mode in ("memmap", "mmap") else 1024, args.hidden),
                                torch.nn.ReLU(), torch.nn.Linear(args.hidden, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if args.mode in ("memmap", "mmap"):
        log.info("reading %s", args.data)
        for step, s in enumerate(samples()):
            x = torch.from_numpy(s).unsqueeze(0)
            loss = model(x).pow(2).mean()
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 50 == 0:
                log.info("step %d loss %.4f", step, loss.item())
            time.sleep(0.01)
        log.info("epoch done")
        return
    for step in range(3):
        loss = model(torch.randn(8, 1024)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        log.info("step %d loss %.4f", step, loss.item())
    rank = dist.get_rank() if distributed else 0
    if rank == 0:
        os.makedirs(args.ckpt, exist_ok=True)
        path = os.path.join(args.ckpt, "step_000003.pt")
        log.info("saving checkpoint to %s", path)
        state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": 3}
        if args.mode == "save-legacy":
            torch.save(state, path, _use_new_zipfile_serialization=False)
        elif args.mode == "save-np":
            np.save(path.replace(".pt", ".npy"), np.concatenate([p.detach().numpy().ravel() for p in model.parameters()]))
        else:
            torch.save(state, path)
        log.info("checkpoint saved")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    (main if args.no_record else record(main))()
"""
)

RUN_SH = """#!/bin/bash
# job script
cd "$(dirname "$0")"
{cmd}
"""

V = Variant
VARIANTS = [
    V(
        "truncated-memmap-python-bash-core-gdb",
        "storage.truncated_file",
        dict(launcher="bash", mode="memmap", mb=32, core=True, no_record=True),
        needs=("gdb",),
    ),
    V(
        "truncated-memmap-torchrun-2r-tee-faulthandler-ts",
        "storage.truncated_file",
        dict(launcher="torchrun", nproc=2, logging="tee", mode="memmap", mb=32, faulthandler=True, ts=True),
        first_rank=None,
    ),
    V(
        "truncated-mmap-torchrun-3r-redirects",
        "storage.truncated_file",
        dict(launcher="torchrun", nproc=3, logging="redirects", mode="mmap", mb=24, rdzv="c10d", no_record=True),
        first_rank=None,
    ),
    V(
        "truncated-memmap-python-faulthandler",
        "storage.truncated_file",
        dict(launcher="python", mode="memmap", mb=16, faulthandler=True),
    ),
    V(
        "ckpt-enospc-torch-save-python-ts",
        "storage.enospc",
        dict(launcher="python", mode="save", tmpfs="2m", hidden=1024, ts=True),
    ),
    V(
        "ckpt-enospc-torch-save-torchrun-3r-tee",
        "storage.enospc",
        dict(launcher="torchrun", nproc=3, logging="tee", mode="save", tmpfs="1m", hidden=2048),
        first_rank=0,
    ),
    V(
        "ckpt-enospc-legacy-save-torchrun-2r-redirects-ts",
        "storage.enospc",
        dict(
            launcher="torchrun", nproc=2, logging="redirects", mode="save-legacy", tmpfs="1m", hidden=1024, ts=True, rdzv="c10d"
        ),
        first_rank=0,
    ),
    V("ckpt-enospc-np-save-python", "storage.enospc", dict(launcher="python", mode="save-np", tmpfs="512k", hidden=2048)),
]


def run(ctx, v: Variant):
    p = v.params
    ctx.write("train.py", TRAIN)
    targs = ["--mode", p["mode"]]
    if p.get("faulthandler"):
        targs.append("--faulthandler")
    if p.get("no_record"):
        targs.append("--no-record")
    if p.get("hidden"):
        targs += ["--hidden", str(p["hidden"])]
    env = ctx.env(LAB_TS="1" if p.get("ts") else "0")
    truncating = p["mode"] in ("memmap", "mmap")
    if truncating:
        (ctx.tmp / "data").mkdir()
        with open(ctx.tmp / "data" / "train.bin", "wb") as f:
            import numpy as np

            np.random.default_rng(0).standard_normal((p["mb"] << 20) // 4, dtype=np.float32).tofile(f)
    if p["launcher"] == "torchrun":
        cmd = [*ctx.launch(p["nproc"], p.get("logging", "console"), p.get("rdzv", "standalone")), "train.py", *targs]
    else:
        cmd = [sys.executable, "train.py", *targs]
    if p["launcher"] == "bash":
        ctx.write("run.sh", RUN_SH.format(cmd=" ".join(["python", "train.py", *targs])))
        os.chmod(ctx.tmp / "run.sh", 0o755)
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        cmd = ["/bin/bash", "run.sh"]
    tmpfs = (str(ctx.tmp / "ckpt"), p["tmpfs"]) if p.get("tmpfs") else None

    def during(proc, out_path):
        if not truncating:
            return
        watch = out_path
        if p.get("logging") == "redirects":
            import time

            for _ in range(300):
                found = list(ctx.tmp.glob("logs/*/attempt_0/0/stdout.log"))
                if found:
                    watch = found[0]
                    break
                time.sleep(0.2)
        if not ctx.wait_for(proc, r"step 50 loss", 90, path=watch):
            raise NotReproduced("the job never got to step 50")
        # another process (a data-sync job, a re-run writing the same file) truncates it
        os.truncate(ctx.tmp / "data" / "train.bin", 1 << 20)

    res = ctx.run(ctx.ns(cmd, tmpfs=tmpfs), timeout=150, env=env, during=during, core=bool(p.get("core")))
    if res.timed_out:
        raise NotReproduced("timed out:\n" + res.output[-2000:])
    ctx.save_text("console.log", res.output)
    ctx.save_tree("logs", ctx.tmp / "logs")
    alltext = "\n".join(b.decode(errors="replace") for b in ctx.saved.values())
    if truncating:
        ctx.notes.append(
            f"data/train.bin ({p['mb']} MiB) truncated to 1 MiB by another process while the job read it through mmap"
        )
        need_in(alltext + f"\nrc={res.rc}", r"Bus error|SIGBUS|rc=-7|exitcode\s*:\s*-7")
    else:
        ctx.notes.append(f"the checkpoint dir was a {p['tmpfs']} tmpfs (private mount namespace)")
        # torch.save (zip writer) reports ENOSPC as "basic_ios::clear: iostream error" /
        # "unexpected pos"; numpy's short write as "N requested and M written"
        need_in(
            alltext,
            r"No space left on device|file write failed|Errno 28|iostream error|"
            r"unexpected pos|requested and \d+ written",
        )
    if p.get("core"):
        cores = sorted(ctx.tmp.glob("core*"))
        if not cores:
            raise NotReproduced("no core file written")
        bt = gdb_core_text(os.path.realpath(sys.executable), cores[0])
        need_in(bt, "SIGBUS")
        ctx.save_text("gdb-backtrace.txt", bt)
        ctx.extra_provenance["core"] = {
            "file": cores[0].name,
            "size_bytes": cores[0].stat().st_size,
            "kept": False,
            "signal": "SIGBUS",
            "note": "core not kept (too large); gdb-backtrace.txt has `thread apply all bt` and `info proc mappings`",
        }
    if p["launcher"] == "torchrun":
        return require_root_cause(res.output)
    return {"rank": v.first_rank, "host": v.first_host}
