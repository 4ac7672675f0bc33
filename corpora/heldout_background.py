"""Write the healthy background used to score a held-out set "buried in noise".

Runs a real 8-process torchrun job on the CPU (gloo backend) that trains a tiny model with
DistributedDataParallel and finishes.  torchrun is started with ``--tee 3`` and ``--log-dir``
so every rank leaves its own stdout/stderr log, as a real job does; the launcher's own console
goes to ``console.log``.  The run directory is then ready for ``python -m corpora.heldout score
CASES_DIR --buried RUN_DIR``.

    python -m corpora.heldout_background OUT_DIR [--nproc 8] [--steps 60] [--timeout 300]

Needs torch (``pip install torch``); nothing else.  OUT_DIR must not exist yet.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

#: the training program every rank runs (written next to the run, removed afterwards)
TRAIN_PY = textwrap.dedent(
    """
    import os
    import sys
    import time

    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP


    def main() -> None:
        steps = int(sys.argv[1])
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        world = dist.get_world_size()
        torch.manual_seed(1234 + rank)
        print(f"rank {rank}/{world}: process group ready (backend={dist.get_backend()})", flush=True)
        model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        w_true = torch.randn(32, 1, generator=torch.Generator().manual_seed(7))
        t0 = time.monotonic()
        for step in range(1, steps + 1):
            x = torch.randn(64, 32)
            y = x @ w_true + 0.01 * torch.randn(64, 1)
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 5 == 0 or step == 1:
                avg = loss.detach().clone()
                dist.all_reduce(avg)
                avg /= world
                print(
                    f"rank {rank}: step {step}/{steps} loss {loss.item():.4f} "
                    f"mean_loss {avg.item():.4f} elapsed {time.monotonic() - t0:.2f}s",
                    flush=True,
                )
            if step % 20 == 0 and rank == 0:
                print(f"rank {rank}: checkpoint at step {step} (in memory, {sum(p.numel() for p in model.parameters())} params)", flush=True)
        dist.barrier()
        print(f"rank {rank}: training finished after {steps} steps", flush=True)
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """
)


def run(out_dir: Path, nproc: int, steps: int, timeout: float) -> int:
    if out_dir.exists():
        print(f"error: {out_dir} exists; give a new directory", file=sys.stderr)
        return 2
    torchrun = shutil.which("torchrun") or str(Path(sys.executable).with_name("torchrun"))
    if not Path(torchrun).exists():
        print("error: torchrun not found; install torch (pip install torch)", file=sys.stderr)
        return 2
    out_dir.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="heldout-bg-") as tmp:
        script = Path(tmp) / "train.py"
        script.write_text(TRAIN_PY, encoding="utf-8")
        env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", LOGLEVEL="INFO")
        cmd = [
            torchrun,
            "--standalone",
            f"--nproc-per-node={nproc}",
            "--tee=3",
            f"--log-dir={out_dir / 'logs'}",
            str(script),
            str(steps),
        ]
        with (out_dir / "console.log").open("wb") as console:
            try:
                proc = subprocess.run(
                    cmd, stdout=console, stderr=subprocess.STDOUT, env=env, cwd=tmp, timeout=timeout, check=False
                )
            except subprocess.TimeoutExpired:
                print(f"error: the job did not finish within {timeout:.0f}s", file=sys.stderr)
                return 1
    if proc.returncode != 0:
        print(f"error: torchrun exited with {proc.returncode}; see {out_dir / 'console.log'}", file=sys.stderr)
        return 1
    logs = sorted(p.relative_to(out_dir) for p in out_dir.rglob("*.log"))
    print(f"healthy {nproc}-rank run written to {out_dir} ({len(logs)} log files)")
    for p in logs:
        print(f"  {p}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m corpora.heldout_background", description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--nproc", type=int, default=8)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds the job may take")
    a = ap.parse_args(argv)
    return run(a.out_dir, a.nproc, a.steps, a.timeout)


if __name__ == "__main__":
    sys.exit(main())
