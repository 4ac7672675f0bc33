"""A deterministic, realistic-looking training log (for the scan tests and benchmarks/bench_scan.py).

Mostly what a long torchrun job writes: NCCL INFO chatter at start-up and whenever a new
communicator is made, rank-prefixed step/loss lines, tqdm bars (non-ASCII), Python warnings,
the odd retried error, and at the end a CUDA OOM traceback and the launcher's report.
"""

from __future__ import annotations

import random
from pathlib import Path

_WORDS = ("forward", "backward", "allreduce", "optimizer", "dataloader", "checkpoint", "prefetch", "bucket", "shard", "zero")


def _nccl_init(rng: random.Random, rank: int, host: str, pid: int, world: int) -> list[str]:
    p = f"[default{rank % 8}]:{host}:{pid}:{pid + 57} [{rank % 8}] NCCL INFO "
    lines = [
        p + f"Bootstrap : Using eth0:10.1.{rank // 8}.{10 + rank % 8}<0>",
        p + "NET/Plugin: No plugin found (libnccl-net.so), using internal implementation",
        p + "cudaDriverVersion 12020",
        p + "NCCL version 2.19.3+cuda12.3" if rank == 0 else p + f"Setting affinity for GPU {rank % 8} to ffff,ffffffff",
        p + "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB eth0:10.1.0.1<0>",
        p + "Using non-device net plugin version 0",
        p + "Using network IB",
    ]
    for ch in range(16):
        peer = (rank + 1) % world
        lines.append(p + f"Channel {ch:02d}/16 :    {rank}[{rank % 8}] -> {peer}[{peer % 8}] via P2P/IPC/read")
    lines.append(p + f"Connected all rings, comm 0x{rng.getrandbits(40):x} nRanks {world}")
    lines.append(p + "NCCL_P2P_LEVEL set by environment to NVL")
    lines.append(
        p
        + f"comm 0x{rng.getrandbits(40):x} rank {rank} nranks {world} cudaDev {rank % 8} nvmlDev {rank % 8} busId {rank % 8}a000 commId 0x{rng.getrandbits(60):x} - Init COMPLETE"
    )
    return lines


def _step_line(rng: random.Random, rank: int, step: int, total: int) -> str:
    loss = 2.5 * (0.9997**step) + rng.random() * 0.05
    kind = rng.random()
    ts = (
        f"2024-05-{1 + step // 40000:02d} {step // 3600 % 24:02d}:{step // 60 % 60:02d}:{step % 60:02d},{rng.randrange(1000):03d}"
    )
    if kind < 0.55:
        return (
            f"[rank{rank}]:[{ts}] [INFO] [train.py:412:train_step] step {step}/{total} loss {loss:.4f} "
            f"lr {3e-4 * min(1.0, step / 2000):.3e} grad_norm {rng.random() * 3:.3f} tokens/s {rng.randrange(90000, 130000)} "
            f"mem_alloc {rng.uniform(40, 70):.2f}GiB"
        )
    if kind < 0.80:
        done = step % 1000
        bar = "\u2588" * (done // 100) + "\u258c" * (done % 100 // 50)
        return f"Epoch {step // 1000}: {done // 10:3d}%|{bar:<10}| {done}/1000 [{done // 60:02d}:{done % 60:02d}<00:00, {rng.uniform(5, 7):.2f}it/s, loss={loss:.3f}, v_num=0]"
    if kind < 0.93:
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(3, 9)))
        return f"[rank{rank}]: {ts} | timers: {words} {rng.uniform(0.1, 900):.2f} ms | samples/sec {rng.uniform(100, 300):.1f}"
    if kind < 0.985:
        return f"[rank{rank}]: {{'loss': {loss:.4f}, 'learning_rate': {3e-4:.2e}, 'epoch': {step / 1000:.2f}, 'step': {step}}}"
    if kind < 0.995:
        return (
            f"[rank{rank}]:/usr/lib/python3.11/site-packages/torch/utils/checkpoint.py:61: UserWarning: None of the inputs "
            "have requires_grad=True. Gradients will be None"
        )
    return f"[rank{rank}]:[{ts}] [WARNING] [engine.py:88] gradient overflow, skipping step {step}; reducing loss scale to {2 ** rng.randrange(8, 16)}"


_FAILURE = """[rank3]: Traceback (most recent call last):
[rank3]:   File "/workspace/train.py", line 512, in <module>
[rank3]:     main()
[rank3]:   File "/workspace/train.py", line 498, in main
[rank3]:     loss = model(batch).loss
[rank3]:   File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1511, in _wrapped_call_impl
[rank3]:     return self._call_impl(*args, **kwargs)
[rank3]:   File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1520, in _call_impl
[rank3]:     return forward_call(*args, **kwargs)
[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.05 GiB is free. Process 41234 has 78.09 GiB memory in use. Of the allocated memory 74.12 GiB is allocated by PyTorch, and 2.51 GiB is reserved by PyTorch but unallocated.
[rank5]:[E ProcessGroupNCCL.cpp:1182] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=98213, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600087 milliseconds before timing out.
W0501 13:02:11.123000 140231 torch/distributed/elastic/multiprocessing/api.py:858] Sending process 41236 closing signal SIGTERM
E0501 13:02:12.456000 140231 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) local_rank: 3 (pid: 41234) of binary: /usr/bin/python3
Traceback (most recent call last):
  File "/usr/bin/torchrun", line 8, in <module>
    sys.exit(main())
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-05-01_13:02:12
  host      : node-3
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 41234)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def write_training_log(path: Path, size: int, seed: int = 7, world: int = 64) -> int:
    """Write about `size` bytes of log to `path`; returns the number of lines written."""
    rng = random.Random(seed)
    hosts = [f"node-{i}" for i in range(world // 8)]
    n = 0
    written = 0
    tail = _FAILURE.encode()
    with path.open("wb") as out:
        buf: list[str] = []
        for r in range(world):
            buf.extend(_nccl_init(rng, r, hosts[r // 8], 40000 + r, world))
        step = 0
        total = 10**7
        while True:
            if step % 20000 == 19999:  # a new communicator (eval, checkpoint): NCCL chatter again
                for r in range(0, world, 4):
                    buf.extend(_nccl_init(rng, r, hosts[r // 8], 40000 + r, world)[-3:])
            if step % 50000 == 25000:
                buf.append(
                    f"[rank{step % world}]: RuntimeError: DataLoader worker (pid {30000 + step % 997}) is killed by signal: "
                    "Bus error. It is possible that dataloader's workers are out of shared memory. Retrying."
                )
            buf.append(_step_line(rng, step % world, step, total))
            step += 1
            if len(buf) >= 4096:
                data = ("\n".join(buf) + "\n").encode()
                n += len(buf)
                buf.clear()
                if written + len(data) + len(tail) > size:
                    keep = data[: max(0, size - written - len(tail))]
                    keep = keep[: keep.rfind(b"\n") + 1]
                    n -= data[len(keep) :].count(b"\n")
                    out.write(keep)
                    written += len(keep)
                    break
                out.write(data)
                written += len(data)
        out.write(tail)
        n += tail.count(b"\n")
    return n
