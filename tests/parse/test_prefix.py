from __future__ import annotations

import pytest

from analyzer.parse.prefix import split_prefix


@pytest.mark.parametrize(
    ("line", "rank", "local_rank", "host", "message"),
    [
        ("[rank3]: RuntimeError: x", 3, None, None, "RuntimeError: x"),
        ("[default3]:Traceback (most recent call last):", None, 3, None, "Traceback (most recent call last):"),
        ("node7: [rank1]: boom", 1, None, "node7", "boom"),
        ("[1,3]<stderr>:Bus error (core dumped)", 3, None, None, "Bus error (core dumped)"),
        ("  3: ImportError: foo", 3, None, None, "ImportError: foo"),
        ("gpu-01:1234:5678 [3] NCCL INFO Bootstrap", None, None, "gpu-01", "NCCL INFO Bootstrap"),
        ("RuntimeError: CUDA error: foo", None, None, None, "RuntimeError: CUDA error: foo"),
        ("torch.OutOfMemoryError: CUDA out of memory.", None, None, None, "torch.OutOfMemoryError: CUDA out of memory."),
        # a file before `: ` is no host (the dynamic loader names the shared object first)
        (
            "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c10",
            None,
            None,
            None,
            "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c10",
        ),
        ("libnccl.so.2: cannot open shared object file", None, None, None, "libnccl.so.2: cannot open shared object file"),
        ("gpu-node-12.cluster.local: Traceback", None, None, "gpu-node-12.cluster.local", "Traceback"),
        # docker compose's container column (v1 `name_1  | `, v2 `name-1  | `), the frame's indent kept
        ('algo-1-xxsq9_1  |   File "/x.py", line 3, in f', None, None, "algo-1-xxsq9_1", '  File "/x.py", line 3, in f'),
        ("trainer-2  | RuntimeError: boom", None, None, "trainer-2", "RuntimeError: boom"),
        # a table's column separator is no container name
        ("| epoch | loss |", None, None, None, "| epoch | loss |"),
        ("loss 3 | acc 0.5", None, None, None, "loss 3 | acc 0.5"),
    ],
)
def test_prefixes(line: str, rank: int | None, local_rank: int | None, host: str | None, message: str) -> None:
    p = split_prefix(line)
    assert (p.rank, p.local_rank, p.host, p.message) == (rank, local_rank, host, message)


def test_nccl_prefix_gives_pid_and_device() -> None:
    p = split_prefix("gpu-01:1234:5678 [3] NCCL WARN Cuda failure")
    assert (p.pid, p.device) == (1234, 3)


@pytest.mark.parametrize(
    ("line", "time_text"),
    [
        ("2024-05-01 12:34:56,789 - INFO - loss 1.2", "2024-05-01 12:34:56,789"),
        ("[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79", "1234.567890"),
        ("[rank1]:[E626 06:24:44.925443925 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog", "E626 06:24:44.925443925"),
        ("[Wed May  1 12:34:56 2024] NVRM: Xid", "Wed May  1 12:34:56 2024"),
        # vLLM's logger, today's and before 0.6 (no `[` before the file)
        ('ERROR 05-29 16:44:33 [multiproc_executor.py:874]   File "/x.py", line 3, in f', "05-29 16:44:33"),
        ("INFO 06-10 12:00:00 llm_engine.py:161] Initializing an LLM engine", "06-10 12:00:00"),
    ],
)
def test_time_prefixes(line: str, time_text: str) -> None:
    assert split_prefix(line).time_text == time_text


def test_vllm_record_prefix_is_peeled_off_every_line() -> None:
    """vLLM's formatter repeats its prefix on each line of a multi-line record (a logged
    traceback): what is left is the traceback's own line, indentation kept."""
    p = split_prefix('(Worker_TP1 pid=912664) ERROR 05-29 16:44:33 [multiproc_executor.py:874]   File "/a.py", line 3, in f')
    assert (p.pid, p.time_text, p.message) == (912664, "05-29 16:44:33", '  File "/a.py", line 3, in f')


def test_nested_ray_prefixes_give_the_innermost_process() -> None:
    """An actor's subprocess logs through its parent (`(LLMRayActor pid=1) (EngineCore_DP0 pid=2) ...`):
    both prefixes come off, and the pid is the one that printed the line."""
    p = split_prefix("(LLMRayActor pid=585804) (EngineCore_DP0 pid=586112) ERROR 03-05 00:25:45 [core.py:1094] boom")
    assert (p.pid, p.time_text, p.message) == (586112, "03-05 00:25:45", "boom")
