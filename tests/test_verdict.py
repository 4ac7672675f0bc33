"""Verdicts that hold: abstention (none / unknown), lines as terminals show them, global ranks and
hosts across nodes, the stalled rank of a hang, versions across files, evidence that quotes its line.

The log lines below are machine-written lines of the emitters named next to them (NCCL's init and
transport INFO lines, torchrun's agent and summary, nvidia-smi's header, DeepSpeed's ds_report and
launcher, Open MPI's mpirun/prterun help texts); hosts and pids changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzer.parse.prefix import split_prefix
from analyzer.pipeline import analyze
from analyzer.report.json_report import render_json
from analyzer.scan.lines import terminal_view

from .conftest import REPO, write_run

CASES = sorted(p.parent for p in (REPO / "corpora").rglob("case.yaml"))
HEALTHY = sorted(p.parent for p in (REPO / "corpora" / "healthy").glob("*/case.yaml"))


# torch.distributed.elastic agent, NCCL INFO chatter of a job that finished
FINISHED = """\
[default0]:gpu-c02:3331:3391 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>
[default0]:gpu-c02:3331:3391 [0] NCCL INFO cudaDriverVersion 12020
[default1]:gpu-c02:3332:3392 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC/read
[default0]:gpu-c02:3331:3391 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read
[default0]:gpu-c02:3331:3391 [0] NCCL INFO comm 0x8b6d9c0 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 1000 commId 0x2cbd2bfba9b22d9b - Init COMPLETE
[default0]:/usr/local/lib/python3.10/dist-packages/torch/cuda/memory.py:330: FutureWarning: torch.cuda.reset_max_memory_allocated now calls torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.
[2024-05-01 10:10:01,456] torch.distributed.elastic.agent.server.api: [INFO] [default] worker group successfully finished. Waiting 300 seconds for other agents to finish.
"""


def test_a_finished_multi_node_torchrun_job_is_none(tmp_path: Path) -> None:
    run = write_run(tmp_path, {"node1/console.log": FINISHED, "node2/console.log": FINISHED.replace("gpu-c02", "gpu-c03")})
    report = analyze(run)
    assert report.verdict.category.value == "none"
    assert report.verdict.title == "No failure found"
    assert report.verdict.first_failure.file is None and report.verdict.confidence >= 0.9


def test_an_empty_run_dir_stays_unknown(tmp_path: Path) -> None:
    assert analyze(tmp_path).verdict.category.value == "unknown"


def test_a_caught_and_logged_exception_is_no_failure(tmp_path: Path) -> None:
    log = (
        "[rank0] no checkpoint to resume from, starting from scratch\n"
        "Traceback (most recent call last):\n"
        '  File "/job/train.py", line 54, in resume\n'
        "    model.load_state_dict(torch.load(path))\n"
        "FileNotFoundError: [Errno 2] No such file or directory: 'checkpoints/last.pt'\n"
        "[rank0] epoch 0 step 0 loss 2.0975\n"
        "[rank0] training finished\n"
    )
    report = analyze(write_run(tmp_path, {"rank0.log": log}))
    assert report.verdict.category.value == "none"
    # the same traceback as the last word of its process is a failure
    dead = analyze(write_run(tmp_path / "dead", {"rank0.log": log.rsplit("[rank0] epoch", 1)[0]}))
    assert dead.verdict.category.value != "none"


@pytest.mark.parametrize(
    "line",
    [
        # the exception line alone, its traceback's header not kept (NCCL's error returned to c10d)
        "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:514, unhandled system error, NCCL version 2.4.8",
        "python: /usr/include/c++/9/bits/stl_vector.h:1042: Assertion '__n < this->size()' failed.",
        "F0101 10:00:00.000000 1234 solver.cpp:88] Check failed: status == 0",
        "terminate called after throwing an instance of 'std::runtime_error'",
        # NCCL's result strings as its callers quote them (XLA, Horovod/TensorFlow)
        "E0605 09:26:44.248647 1054 pjrt_stream_executor_client.cc:2839] Execution of replica 0 failed: INTERNAL: "
        "NCCL operation ncclGroupEnd() failed: unhandled system error",
        "UnknownError (see above for traceback): ncclCommInitRank failed: unhandled cuda error",
        # c10d's line naming the code NCCL returned, its `NCCL error in:` line lost
        "ncclInternalError: Internal check failed.",
        # the DataLoader's report of a worker's crash (torch/utils/data/_utils/signal_handling.py)
        "ERROR: Unexpected segmentation fault encountered in worker.",
        # exception lines whose name has a capital before "Error", and a private one
        "OSError: [Errno 16] Please reduce your request rate.",
        "torch._C._LinAlgError: cusolver error: CUSOLVER_STATUS_INVALID_VALUE, when calling `cusolverDnSgetrf(handle)`",
        # the CUDA samples' checkCudaErrors and TensorFlow's driver wrapper, with a code that names no cause
        'CUDA error at train.cu:42 code=1(cudaErrorInvalidValue) "cudaDeviceSynchronize()"',
        "E0101 10:00:00.000000 1234 cuda_driver.cc:300] failed call to cuCtxSynchronize: CUDA_ERROR_INVALID_VALUE",
        # the host's uncorrected memory error; the driver finding no GPU; a framework's dead worker
        "[ 3456.789012] EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0)",
        "[    5.123456] NVRM: No NVIDIA devices probed.",
        "The actor died because its node has died. Node Id: 5b1c8e0f4a6d2e9b7c3a1f0e8d6c4b2a",
        "ERROR 04-30 09:20:11 [core.py:396] EngineCore failed to start.",
        # a framework's own report that an exception ended one of its threads, processes or
        # components, also when the traceback it announces was not kept
        "[2025-02-23 06:04:22 TP7] Scheduler hit an exception: Traceback (most recent call last):",
        "Unhandled exception <class 'RuntimeError'> in thread <_MainThread(MainThread, started 2291141)>, proc 11643.",
        "Uncaught exception in the data loader thread, exiting",
        # a process reported as crashed (even when it is retried), PaddlePaddle's crash report,
        # CTest's failed test, OpenSSH's word that the remote command was killed
        "Subprocess crashed, retrying...",
        "C++ Traceback (most recent call last):",
        "18/21 Test #1116: test_parallel_executor_profiler ..........***Failed   13.99 sec",
        "Killed by signal 2.",
    ],
)
def test_a_dying_line_no_signature_names_is_unknown_not_none(tmp_path: Path, line: str) -> None:
    report = analyze(write_run(tmp_path, {"rank0.log": f"[rank0] epoch 0 step 10 loss 2.0975\n{line}\n"}))
    assert report.verdict.category.value == "unknown"
    # the cause is unknown, the failure is not: its line is the first failure, on the timeline once
    assert (report.verdict.first_failure.file, report.verdict.first_failure.line) == ("rank0.log", 2)
    assert [t.line for t in report.timeline] == [2]
    assert "rank0.log:2" in report.verdict.explanation


def test_an_xid_harmless_alone_is_no_failure_one_of_a_fault_is(tmp_path: Path) -> None:
    corrected = "[ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 92, pid=1234, High single-bit ECC error rate\n"
    log = "[rank0] epoch 0 step 10 loss 2.0975\n"
    assert analyze(write_run(tmp_path / "sbe", {"rank0.log": log, "dmesg.log": corrected})).verdict.category.value == "none"
    dbe = corrected.replace(
        "92, pid=1234, High single-bit ECC error rate", "48, pid=1234, An uncorrectable double bit error (DBE) has been detected"
    )
    report = analyze(write_run(tmp_path / "dbe", {"rank0.log": log, "dmesg.log": dbe}))
    assert report.verdict.category.value == "hardware_xid"


def test_a_process_the_kernel_killed_for_a_fault_is_a_failure(tmp_path: Path) -> None:
    dmesg = (
        "[ 4567.123456] python[12345]: segfault at 0 ip 00007f1234567890 sp 00007ffd12345678 error 4"
        " in libfoo.so[7f1230000000+1e000000]\n"
    )
    report = analyze(write_run(tmp_path, {"rank0.log": "[rank0] epoch 0 step 10 loss 2.0975\n", "dmesg.log": dmesg}))
    assert report.verdict.category.value == "unknown"
    assert (report.verdict.first_failure.file, report.verdict.first_failure.line) == ("dmesg.log", 1)


@pytest.mark.parametrize(
    ("after", "category"),
    [
        ("", "network"),  # the log ends while c10d still cannot resolve the master's name
        # the name appeared later and the job went on
        ("".join(f"[rank1] epoch 0 step {i} loss 2.0975\n" for i in range(5)) + "[rank1] training finished\n", "none"),
    ],
    ids=["ends-there", "resolved-later"],
)
def test_c10d_retrying_an_unresolvable_name_is_a_failure_only_where_the_log_ends(
    tmp_path: Path, after: str, category: str
) -> None:
    warning = (
        "[W1130 03:08:{s:02d}.107291111 socket.cpp:764] [c10d] The IPv6 network addresses of (master-0.job, 23456)"
        " cannot be retrieved (gai error: -2 - Name or service not known).\n"
    )
    log = "".join(warning.format(s=s) for s in range(3)) + after
    assert analyze(write_run(tmp_path, {"rank1.log": log})).verdict.category.value == category


def test_a_tensorflow_1_session_error_is_the_programs_exception(tmp_path: Path) -> None:
    # TF 1.x names the op's error class, then "(see above for traceback)", then the message
    line = "InvalidArgumentError (see above for traceback): Received a label value of 48 which is outside the valid range of [0, 40)."
    report = analyze(write_run(tmp_path, {"rank0.log": f"[rank0] epoch 0 step 10 loss 2.0975\n{line}\n"}))
    assert report.verdict.category.value == "user_code"
    assert (report.verdict.first_failure.file, report.verdict.first_failure.line) == ("rank0.log", 2)


def test_an_nccl_error_without_debug_output_asks_for_it(tmp_path: Path) -> None:
    line = "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:514, unhandled system error, NCCL version 2.4.8"
    report = analyze(write_run(tmp_path, {"rank0.log": f"step 10\n{line}\n"}))
    assert any("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET" in h for h in report.missing_evidence)
    # with NCCL's debug output kept, nothing to ask for
    debug = "node1:3245:3245 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    kept = analyze(write_run(tmp_path / "kept", {"rank0.log": f"{debug}step 10\n{line}\n"}))
    assert not any("NCCL_DEBUG" in h for h in kept.missing_evidence)


def test_a_chain_of_nccl_error_returns_is_a_failure_one_alone_is_not(tmp_path: Path) -> None:
    head = "gpu-c02:3331:3331 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
    chain = (
        "gpu-c02:3331:3391 [0] NCCL INFO graph/topo.cc:712 -> 3\n"
        "gpu-c02:3331:3391 [0] NCCL INFO transport.cc:33 -> 3\n"
        "gpu-c02:3331:3391 [0] NCCL INFO init.cc:1079 -> 3\n"
    )
    report = analyze(write_run(tmp_path / "chain", {"rank0.log": head + chain}))
    assert report.verdict.category.value == "unknown"
    # one return line (a finishing peer's socket closing) and a zero result are no failure
    alone = "gpu-c02:3331:3391 [0] NCCL INFO misc/socket.cc:564 -> 2\ngpu-c02:3331:3391 [0] NCCL INFO init.cc:1079 -> 0\n"
    assert analyze(write_run(tmp_path / "alone", {"rank0.log": head + alone})).verdict.category.value == "none"


def test_a_chain_of_error_returns_from_the_socket_code_is_a_network_failure(tmp_path: Path) -> None:
    log = (
        "a100-03:2330:2658 [2] NCCL INFO Using network IBext\n"
        "a100-03:2330:2658 [2] NCCL INFO misc/socket.cc:567 -> 2\n"
        "a100-03:2330:2658 [2] NCCL INFO misc/socket.cc:618 -> 2\n"
        "a100-03:2330:2658 [2] NCCL INFO bootstrap.cc:270 -> 2\n"
    )
    report = analyze(write_run(tmp_path, {"nccl.log": log}))
    assert (report.verdict.category.value, report.verdict.subcategory) == ("network", "network.socket_error")
    assert report.verdict.first_failure.line == 2  # the chain's first (deepest) line
    # the same chain begun in the P2P transport names no socket
    p2p = analyze(write_run(tmp_path / "p2p", {"nccl.log": log.replace("misc/socket.cc", "transport/p2p.cc")}))
    assert p2p.verdict.category.value != "network"


def test_a_ray_worker_prefix_is_read(tmp_path: Path) -> None:
    log = (
        '(ActorModelRayActor pid=348952)   File "/usr/lib/python3/vllm/device_allocator/cumem.py", line 75, in create_and_map\n'
        "(ActorModelRayActor pid=348952)     python_create_and_map(*allocation_handle)\n"
        "(ActorModelRayActor pid=348952) RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62\n"
    )
    report = analyze(write_run(tmp_path, {"driver.log": log}))
    assert report.verdict.category.value == "oom_cascade"
    row = report.evidence[0]
    assert row.line == 3 and "out of memory" in row.text


NCCL_TESTS_HEAD = (
    "# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
    "#\n"
    "# Using devices\n"
    "#   Rank  0 Pid  21284 on     node3 device  0 [0x2f] NVIDIA A100-SXM4-80GB\n"
    "#   Rank  1 Pid  21284 on     node3 device  1 [0x03] NVIDIA A100-SXM4-80GB\n"
    "#\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
)


def test_an_nccl_tests_run_that_stops_after_its_header_is_a_failure_of_unknown_cause(tmp_path: Path) -> None:
    report = analyze(write_run(tmp_path / "stalled", {"nccl-tests.log": NCCL_TESTS_HEAD}))
    assert report.verdict.category.value == "unknown"
    assert report.verdict.first_failure.line == 7
    assert any("NCCL_P2P_DISABLE" in r for r in report.verdict.remediation)
    rows = (
        "           8             2     float     sum      -1    18.92    0.00    0.00      0    18.62    0.00    0.00      0\n"
        "# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 0.00123\n"
        "#\n"
    )
    finished = analyze(write_run(tmp_path / "finished", {"nccl-tests.log": NCCL_TESTS_HEAD + rows}))
    assert finished.verdict.category.value == "none"


NCCL_INIT = (
    "gpu-a01:2251:2251 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    "NCCL version 2.18.3+cuda12.1\n"
    "gpu-a01:2251:2290 [0] NCCL INFO Channel 00/02 :    0   1\n"
    "gpu-a01:2251:2290 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1\n"
    "gpu-a01:2251:2290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
    "gpu-a01:2252:2291 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n"
)
NCCL_INIT_DONE = (
    "gpu-a01:2251:2290 [0] NCCL INFO comm 0x55d1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x9a1 - Init COMPLETE\n"
)


def test_a_log_that_ends_while_nccl_makes_its_communicator_is_a_stall_of_unknown_cause(tmp_path: Path) -> None:
    stalled = analyze(write_run(tmp_path / "stalled", {"rank0.log": NCCL_INIT}))
    assert stalled.verdict.category.value == "unknown"
    assert any(e.signature == "unknown.nccl_init_stalled" for e in stalled.evidence)
    assert any("NCCL_P2P_DISABLE" in r for r in stalled.verdict.remediation)
    # the communicator was made: what follows it (or nothing) is no failure
    done = analyze(write_run(tmp_path / "done", {"rank0.log": NCCL_INIT + NCCL_INIT_DONE}))
    assert done.verdict.category.value == "none"
    # setup lines followed by the job's own output: it went on
    went_on = analyze(
        write_run(tmp_path / "went-on", {"rank0.log": NCCL_INIT + "step 1 loss 2.31\nstep 2 loss 2.20\nstep 3 loss 2.11\n"})
    )
    assert went_on.verdict.category.value == "none"
    # without NCCL's banner the file may be a cut excerpt, or an NCCL older than 2.4 that never
    # says Init COMPLETE: no stall is claimed
    banner = "NCCL version 2.18.3+cuda12.1\n"
    excerpt = analyze(write_run(tmp_path / "excerpt", {"rank0.log": NCCL_INIT.replace(banner, "")}))
    assert excerpt.verdict.category.value == "none"
    old = analyze(write_run(tmp_path / "old", {"rank0.log": NCCL_INIT.replace("2.18.3+cuda12.1", "2.3.7+cuda9.2")}))
    assert old.verdict.category.value == "none"


PRESSURE = (
    "2021-11-05 09:30:48.424570: W tensorflow/core/common_runtime/bfc_allocator.cc:271] Allocator (GPU_0_bfc) ran out"
    " of memory trying to allocate 2.55GiB with freed_by_count=0. The caller indicates that this is not a failure, but"
    " may mean that there could be performance gains if more memory were available.\n"
)
CRASH = "2021-11-05 09:30:49.100000: E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"


def test_memory_pressure_before_a_crash_nothing_explains_is_a_lead_not_a_failure(tmp_path: Path) -> None:
    # the allocator retried and the job went on: no failure
    went_on = analyze(write_run(tmp_path / "went-on", {"rank0.log": PRESSURE + "Epoch 1/10\nEpoch 2/10\n"}))
    assert went_on.verdict.category.value == "none"
    # then a crash that no signature explains: memory exhaustion, at low confidence, and the first
    # failure is the crash's own line, not the warning
    led = analyze(write_run(tmp_path / "led", {"rank0.log": PRESSURE + "Epoch 1/10\n" + CRASH}))
    assert led.verdict.category.value == "oom_cascade"
    assert led.verdict.confidence <= 0.4
    assert led.verdict.first_failure.line == 3
    assert any(e.signature == "oom_cascade.allocator_pressure" and e.role.value == "context" for e in led.evidence)
    assert led.verdict.remediation
    # the same crash alone, or with the warning only after it (a consequence), names no cause
    alone = analyze(write_run(tmp_path / "alone", {"rank0.log": "Epoch 1/10\n" + CRASH}))
    assert alone.verdict.category.value == "unknown"
    after = analyze(
        write_run(tmp_path / "after", {"rank0.log": "Epoch 1/10\n" + CRASH + PRESSURE.replace("09:30:48", "09:30:50")})
    )
    assert after.verdict.category.value == "unknown"


@pytest.mark.parametrize(
    ("before", "exception", "after", "category"),
    [
        # logged as caught and followed by training: the exception line is no failure
        (
            "ERROR:root:could not read the cached index, rebuilding it\n",
            "EOFError: Ran out of input",
            "[rank0] epoch 0 step 0 loss 2.0975\n[rank0] training finished\n",
            "none",
        ),
        # the process died; the next line is the user's `echo $LD_LIBRARY_PATH`, not the process going on
        (
            "",
            "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but linked against (8, 0, 3)",
            "/opt/cudnn/v8.0.3/lib64:/opt/cuda/11.0/lib64:/usr/local/cuda/lib64\n",
            "version_mismatch",
        ),
        # PyTorch's ROCm build: the HIP error's hint lines belong to the exception message
        (
            "",
            "RuntimeError: HIP error: invalid device function",
            "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
            "For debugging consider passing AMD_SERIALIZE_KERNEL=3\n",
            "version_mismatch",
        ),
        # Weights & Biases' exit hook prints its run summary after the process died
        (
            "",
            "RuntimeError: CUDA error: device-side assert triggered",
            "wandb: 🚀 View run fine-tune at: https://wandb.ai/team/proj/runs/abc123\nwandb: Find logs at: ./wandb/run-20240101_000000-abc123/logs\n",
            "user_code",
        ),
        # glibc aborting on a corrupted heap as the interpreter tears down
        ("", "RuntimeError: CUDA error: device-side assert triggered", "free(): invalid pointer\n", "user_code"),
    ],
    ids=["caught-and-logged", "shell-line-after", "hip-hint-lines", "wandb-exit-summary", "glibc-abort-after"],
)
def test_what_follows_a_traceback_tells_whether_it_was_caught(
    tmp_path: Path, before: str, exception: str, after: str, category: str
) -> None:
    log = f'{before}Traceback (most recent call last):\n  File "/job/train.py", line 12, in load\n    return build()\n{exception}\n{after}'
    assert analyze(write_run(tmp_path, {"rank0.log": log})).verdict.category.value == category


def test_a_queue_feeder_threads_traceback_is_not_caught_by_the_output_after_it(tmp_path: Path) -> None:
    """multiprocessing's queue feeder thread prints what it could not send and drops it: the main
    process printing on is no sign that anything handled it."""
    log = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.7/multiprocessing/queues.py", line 236, in _feed\n'
        "    obj = _ForkingPickler.dumps(obj)\n"
        '  File "/usr/lib/python3.7/site-packages/torch/multiprocessing/reductions.py", line 295, in reduce_storage\n'
        "    fd, size = storage._share_fd_()\n"
        "RuntimeError: unable to write to file </torch_5807_1602858868>\n"
        "setting learning rate to: 0.00025\n"
        "training start...\n"
    )
    assert analyze(write_run(tmp_path, {"train.log": log})).verdict.category.value == "shm"
    # the same traceback from the program's own code, with its output going on: caught
    own = log.replace("multiprocessing/queues.py", "job/loader.py")
    assert analyze(write_run(tmp_path / "own", {"train.log": own})).verdict.category.value == "none"


@pytest.mark.parametrize(
    ("frame", "exception", "category"),
    [
        (
            '  File "/opt/venv/lib/python3.10/site-packages/submitit/core/job_environment.py", line 185, in checkpoint_and_try_requeue\n'
            "    raise utils.UncompletedJobError(message)\n",
            "submitit.core.utils.UncompletedJobError: Job not requeued because: timed-out and not checkpointable.",
            "scheduler",
        ),
        (
            '  File "/opt/venv/lib/python3.10/site-packages/torch/distributed/elastic/multiprocessing/api.py", line 62, in _terminate_process_handler\n'
            '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)\n',
            "torch.distributed.elastic.multiprocessing.api.SignalException: Process 8665 got signal: 15",
            "scheduler",
        ),
        (  # a sticky CUDA error: no CUDA work goes on in that process after it
            '  File "/job/train.py", line 96, in train_net\n    F.one_hot(true_masks, net.n_classes).float()\n',
            "RuntimeError: CUDA error: device-side assert triggered",
            "user_code",
        ),
        (
            '  File "/job/train.py", line 96, in train_net\n    loss.backward()\n',
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "unknown",  # a failure, whose message alone names no cause (test_a_kernel_fault_alone_...)
        ),
    ],
)
def test_an_exception_raised_to_end_the_process_is_not_caught_by_lines_after_it(
    tmp_path: Path, frame: str, exception: str, category: str
) -> None:
    """submitit's UncompletedJobError and torchelastic's SignalException are raised to end the
    process and every handler of their emitter re-raises them, and after a sticky CUDA error every
    later CUDA call fails: lines after them (another process's, or pasted from elsewhere) do not
    make them a caught exception."""
    log = (
        "Traceback (most recent call last):\n"
        '  File "/job/train.py", line 88, in <module>\n'
        "    main()\n"
        f"{frame}{exception}\n"
        "2021-01-20 22:08 INFO 20945:pipeline - Parsed 1 / 16000 files.\n"
        "2021-01-20 22:08 INFO 20945:root - Starting download of part 2\n"
    )
    assert analyze(write_run(tmp_path, {"train.log": log})).verdict.category.value == category
    # a program's own exception with the same lines after it was caught
    own = log.replace(exception, "ValueError: could not parse part 1")
    assert analyze(write_run(tmp_path / "own", {"train.log": own})).verdict.category.value == "none"


def test_terminal_view_splits_redraws_and_glued_messages() -> None:
    raw = b"a\n\x1b[31mERROR\x1b[0m: x\r\n 10%|#  | 1/10\r 20%|## | 2/10\rKilled\n100%|####| Killed\n"
    view, breaks, _ = terminal_view(raw)
    assert view.split(b"\n")[:6] == [b"a", b"ERROR: x\r", b" 10%|#  | 1/10", b" 20%|## | 2/10", b"Killed", b"100%|####"]
    assert len(breaks) == 3


def test_colour_codes_as_syslog_escaped_them_are_dropped(tmp_path: Path) -> None:
    line = "#033[2m#033[33m(raylet)#033[0m [2024-03-05 14:22:07,512 E 2871 2871] (raylet) node_manager.cc:3007: 2 Workers"
    assert split_prefix(line).message.startswith("(raylet) ")
    log = "#033[2m#033[33m(raylet)#033[0m Refer to the documentation on how to address the out of memory issue: https://docs.ray.io\n"
    report = analyze(write_run(tmp_path, {"raylet.log": log}))
    assert report.verdict.category.value == "oom_cascade"
    assert report.evidence[0].line == 1


def test_killed_glued_after_a_progress_bar_is_found(tmp_path: Path) -> None:
    log = "Epoch 1:  10%|#   | 1/10 [00:01<00:09, 1.0it/s]\rEpoch 1: 100%|##########| 10/10 [00:09<00:00, 1.0it/s]Killed\n"
    report = analyze(write_run(tmp_path, {"train.log": log}))
    assert report.verdict.category.value == "oom_cascade"
    assert report.evidence[0].line == 1 and report.evidence[0].text == "Killed"


# torchrun --tee console of node 2 of a 4 x 8 job: the OOM under [default5]: is rank 21
NODE2 = """\
[default5]:gpu-c02:3336:3396 [5] NCCL INFO comm 0x8b6d9c0 rank 21 nranks 32 cudaDev 5 nvmlDev 5 busId 8a000 commId 0x2cbd2bfba9b22d9b - Init COMPLETE
[default4]:gpu-c02:3335:3395 [4] NCCL INFO comm 0x8b6d9d0 rank 20 nranks 32 cudaDev 4 nvmlDev 4 busId 89000 commId 0x2cbd2bfba9b22d9b - Init COMPLETE
[default5]:Traceback (most recent call last):
[default5]:  File "/workspace/train.py", line 88, in <module>
[default5]:    loss.backward()
[default5]:torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a total capacty of 79.15 GiB of which 1.21 GiB is free.
[2024-05-01 10:00:05,456] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) local_rank: 5 (pid: 3336) of binary: /usr/bin/python
Root Cause (first observed failure):
[0]:
  time      : 2024-05-01_10:00:04
  host      : gpu-c02
  rank      : 21 (local_rank: 5)
  exitcode  : 1 (pid: 3336)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_tee_local_rank_becomes_the_global_rank_with_its_host_and_time(tmp_path: Path) -> None:
    report = analyze(write_run(tmp_path, {"node2/console.log": NODE2}))
    ff = report.verdict.first_failure
    assert report.verdict.category.value == "oom_cascade"
    assert (ff.rank, ff.host, ff.file, ff.line) == (21, "gpu-c02", "node2/console.log", 6)
    assert ff.time is not None  # torchrun's summary dates rank 21's failure
    assert report.evidence[0].text.startswith("[default5]:torch.cuda.OutOfMemoryError")


def test_an_unmapped_local_rank_on_a_multi_node_job_is_a_warning(tmp_path: Path) -> None:
    lines = "".join(line + "\n" for line in NODE2.splitlines()[2:6])
    report = analyze(write_run(tmp_path, {"node1/console.log": lines, "node2/console.log": lines}))
    assert any("local ranks" in w for w in report.warnings)


def test_the_rank_that_never_came_is_the_first_failure_of_a_hang() -> None:
    # lab: 2 ranks on gloo, rank 0 stuck in data loading, rank 1 times out, the agent SIGTERMs rank 0
    report = analyze(REPO / "corpora" / "lab" / "lab-hang-002")
    assert report.verdict.category.value == "hang"
    assert report.verdict.first_failure.rank == 0  # torchrun's Root Cause says rank 1


def test_torch_built_for_a_newer_cuda_than_the_driver_then_sigsegv(tmp_path: Path) -> None:
    files = {
        "nvidia-smi.txt": "| NVIDIA-SMI 530.30.02              Driver Version: 530.30.02    CUDA Version: 12.1     |\n",
        "ds_report.txt": "torch version .................... 2.7.0+cu128\ntorch cuda version ............... 12.8\n",
        "console.log": "[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['/opt/venv/bin/python3.10', "
        "'-u', 'trainCLM.py', '--local_rank=1'] exits with return code = -11\n",
    }
    report = analyze(write_run(tmp_path, files))
    assert report.verdict.category.value == "version_mismatch"
    assert "12.8" in report.verdict.explanation and "12.1" in report.verdict.explanation
    quoted = {e.file: e.text for e in report.evidence if e.role.value == "root_cause"}
    assert "2.7.0+cu128" in quoted["ds_report.txt"] and "CUDA Version: 12.1" in quoted["nvidia-smi.txt"]
    # the same versions without a crash are no failure
    files.pop("console.log")
    assert analyze(write_run(tmp_path / "ok", files)).verdict.category.value == "none"


def _line(run: Path, file: str, line: int) -> str:
    raw = (run / file).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        import gzip

        raw = gzip.decompress(raw)
    view, _, _ = terminal_view(raw.splitlines()[line - 1] if line <= len(raw.splitlines()) else b"")
    return view.decode("utf-8", errors="replace")


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_every_evidence_row_quotes_the_line_it_cites(case: Path) -> None:
    report = analyze(case)
    assert len(set(report.timeline)) == len(report.timeline)  # no moment listed twice
    seen = set()
    for e in report.evidence:
        assert (e.file, e.line) not in seen  # one row per line
        seen.add((e.file, e.line))
        if e.line is None or (case / e.file).suffix in (".json",) or not (case / e.file).is_file():
            continue
        assert e.text.strip() in _line(case, e.file, e.line).replace("\n", " ") + " ", (e.file, e.line, e.text)


@pytest.mark.parametrize("case", HEALTHY, ids=lambda p: p.name)
def test_no_failure_is_invented_on_the_healthy_corpus(case: Path) -> None:
    report = analyze(case)
    assert report.verdict.category.value == "none", [e.text for e in report.evidence[:3]]


# --- on the lab's run dirs (real torchrun, gloo) and the version-mismatch fixture --------------


def test_lab_4_node_tee_oom_names_the_global_rank_its_host_and_time() -> None:
    # 4 nodes x 2, --tee: the victim is local rank 1 on labnode3, global rank 5
    report = analyze(REPO / "corpora" / "lab" / "lab-oom-cascade-007")
    ff = report.verdict.first_failure
    assert report.verdict.category.value == "oom_cascade"
    assert (ff.rank, ff.host) == (5, "labnode3")
    assert ff.time is not None and ff.time_approx  # the kernel log's uptime has no wall clock: torchrun's record dates it
    data = json.loads(render_json(report))
    assert data["verdict"]["first_failure"]["time_approx"] is True
    assert all(5 not in c.ranks for c in report.cascade)  # the victim is not its own cascade


def test_lab_2_node_stall_names_the_stalled_rank() -> None:
    # rank 2 (local rank 0 on labnode2) stalls in data loading; ranks 0, 1 and 3 time out
    report = analyze(REPO / "corpora" / "lab" / "lab-hang-007")
    assert report.verdict.category.value == "hang"
    assert (report.verdict.first_failure.rank, report.verdict.first_failure.host) == (2, "labnode2")


def test_lab_finished_2_node_job_is_none() -> None:
    report = analyze(REPO / "corpora" / "healthy" / "lab-healthy-001")
    assert report.verdict.category.value == "none" and not report.evidence and not report.missing_evidence


def test_deepspeed_torch_cu128_on_a_driver_for_cuda_12_1_exiting_minus_11() -> None:
    report = analyze(REPO / "tests" / "fixtures" / "version_mismatch" / "deepspeed-cu128-driver121")
    v = report.verdict
    assert v.category.value == "version_mismatch" and v.subcategory == "version_mismatch.driver_too_old"
    assert v.first_failure.rank == 1  # DeepSpeed's launcher: '--local_rank=1' ... exits with return code = -11
    assert "CUDA 12.8" in v.explanation and "CUDA 12.1" in v.explanation
    texts = [e.text for e in report.evidence if e.role.value == "root_cause"]
    assert any("2.7.0+cu128" in t for t in texts) and any("CUDA Version: 12.1" in t for t in texts)


# --- flight-recorder dumps: the dump's own format (keys as PyTorch's flight recorder writes them)


def _dump(rank: int, seqs: list[tuple[int, str]]) -> dict[str, object]:
    entries = [
        {
            "record_id": i,
            "pg_id": 0,
            "process_group": ("0", "default_pg"),
            "collective_seq_id": seq,
            "p2p_seq_id": 0,
            "op_id": seq,
            "profiling_name": "nccl:all_reduce",
            "input_sizes": [[3, 4]],
            "input_dtypes": ["Float"],
            "state": state,
        }
        for i, (seq, state) in enumerate(seqs)
    ]
    return {"version": "2.4", "rank": rank, "pg_config": {"0": {"name": "0", "desc": "default_pg"}}, "entries": entries}


def test_flight_recorder_dumps_name_the_rank_that_fell_behind(tmp_path: Path) -> None:
    import pickle

    from analyzer.correlate.blame import stalled_rank
    from analyzer.events.ingest import Ingested, ingest_flight_recorder
    from analyzer.sources.discover import discover

    (tmp_path / "nccl_trace_rank_0").write_bytes(pickle.dumps(_dump(0, [(1, "completed"), (2, "completed")])))
    (tmp_path / "nccl_trace_rank_1").write_bytes(pickle.dumps(_dump(1, [(1, "completed")])))
    (tmp_path / "trace_2.json").write_text(json.dumps(_dump(2, [(1, "completed"), (2, "started")])))
    out = Ingested()
    for src in discover(tmp_path):
        assert src.kind.value == "flight_recorder", src.rel
        ingest_flight_recorder(src, out)
    assert {e.rank: e.fields["fr_last_seq"] for e in out.events} == {0: 2, 1: 1, 2: 2}
    found = stalled_rank(out.events, [])
    assert found is not None and found[0] == 1


def test_a_pickle_that_names_a_callable_is_refused(tmp_path: Path) -> None:
    import os
    import pickle

    from analyzer.sources.flight_recorder import read_dump

    class Evil:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.getcwd, ())  # type: ignore[return-value]

    path = tmp_path / "nccl_trace_rank_0"
    path.write_bytes(pickle.dumps({"entries": [Evil()]}))
    with pytest.raises(ValueError, match="refused"):
        read_dump(path, path.name)


def test_windows_paths_and_crlf_lines_are_read(tmp_path: Path) -> None:
    log = (
        "Traceback (most recent call last):\r\n"
        '  File "C:\\Users\\me\\train.py", line 12, in <module>\r\n'
        "    main()\r\n"
        '  File "C:\\Users\\me\\anaconda3\\envs\\t\\lib\\site-packages\\torch\\cuda\\__init__.py", line 293, in _lazy_init\r\n'
        "    torch._C._cuda_init()\r\n"
        "RuntimeError: CUDA error: out of memory\r\n"
    )
    report = analyze(write_run(tmp_path, {"train.log": log}))
    assert report.verdict.category.value == "oom_cascade"
    assert (report.evidence[0].line, report.evidence[0].text) == (6, "RuntimeError: CUDA error: out of memory")


def test_a_workers_own_file_under_attempt_dir_takes_its_nodes_global_rank(tmp_path: Path) -> None:
    # torchrun --log-dir on node 2 of 2 x 2: attempt_0/1/ is local rank 1; the node's console says rank 3
    oom = (
        "Traceback (most recent call last):\n"
        '  File "/job/train.py", line 9, in <module>\n'
        "    loss.backward()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB"
        " of which 1.21 GiB is free.\n"
    )
    init = (
        "[default{local}]:n:11{local}:12{local} [{local}] NCCL INFO comm 0x5 rank {rank} nranks 4 cudaDev {local}"
        " busId 1000 commId 0x7 - Init COMPLETE\n"
    )
    files = {
        "a/console.log": "".join(init.format(local=i, rank=i) for i in (0, 1)),
        "b/console.log": "".join(init.format(local=i, rank=i + 2) for i in (0, 1)),
        "b/logs/run_x/attempt_0/1/stderr.log": oom,
    }
    report = analyze(write_run(tmp_path, files))
    assert report.verdict.category.value == "oom_cascade"
    assert (report.verdict.first_failure.file, report.verdict.first_failure.rank) == ("b/logs/run_x/attempt_0/1/stderr.log", 3)


def test_stacked_prefixes_map_the_local_rank_to_the_global_one(tmp_path: Path) -> None:
    # torchrun --tee's [default3]: with PyTorch's own [rank11]: after it, on node 2 of 2 x 8
    log = (
        "[default3]:[rank11]: Traceback (most recent call last):\n"
        '[default3]:[rank11]:   File "/job/train.py", line 9, in <module>\n'
        "[default3]:[rank11]:     loss.backward()\n"
        "[default3]:[rank11]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "[default3]:gpu-c02:3331:3391 [3] NCCL INFO [Service thread] Connection closed by localRank 3\n"
    )
    report = analyze(write_run(tmp_path, {"node2/console.log": log}))
    assert report.verdict.first_failure.rank == 11
    assert report.verdict.first_failure.host == "gpu-c02"  # the host the NCCL line of the same rank prints


def test_the_agents_own_failed_record_names_a_local_rank_mapped_to_the_global_one() -> None:
    # "failed (exitcode: -9) local_rank: 1 (pid: ...)" on node 2 of a 2 x 2 job is global rank 3,
    # as the same console's summary says (rank : 3 (local_rank: 1))
    report = analyze(REPO / "corpora" / "lab" / "lab-oom-cascade-004")
    rows = [e for e in report.evidence if "failed (exitcode: -9) local_rank: 1" in e.text]
    assert rows and {e.rank for e in rows} == {3}


_TIMEOUT = (
    "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, "
    "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800008 milliseconds before timing out.\n"
)
_CANCEL = "slurmstepd: error: *** STEP 6053.0 ON node01 CANCELLED AT 2024-04-23T12:18:08 ***\n"


def test_a_reasonless_cancel_after_a_timeout_is_its_teardown(tmp_path: Path) -> None:
    after = analyze(write_run(tmp_path / "after", {"slurm.log": "epoch 1 step 40\n" + _TIMEOUT + _CANCEL}))
    assert after.verdict.category.value == "hang"
    # the same cancel before any error is the cause
    before = analyze(write_run(tmp_path / "before", {"slurm.log": "epoch 1 step 40\n" + _CANCEL + _TIMEOUT}))
    assert before.verdict.category.value == "scheduler"


_RETRY = (
    "[W socket.cpp:663] [c10d] The client socket has failed to connect to [::ffff:10.0.0.1]:29500 "
    "(errno: 110 - Connection timed out).\n"
)


def test_a_wait_counts_only_as_the_last_words_of_its_log(tmp_path: Path) -> None:
    went_on = "".join(f"[rank1] epoch 0 step {i} loss 2.0\n" for i in range(5))
    over = analyze(write_run(tmp_path / "over", {"rank1.log": _RETRY * 3 + went_on + "[rank1] training finished\n"}))
    assert over.verdict.category.value == "none"
    stuck = analyze(write_run(tmp_path / "stuck", {"rank1.log": "[rank1] starting\n" + _RETRY * 3}))
    assert stuck.verdict.category.value == "network"
    assert stuck.verdict.subcategory == "network.rendezvous"


# The CUDA samples that check P2P, composed with their printf formats (tests/fixtures/parse/cuda_p2p/*.source)
_P2P_SAMPLES = REPO / "tests" / "fixtures" / "parse" / "cuda_p2p"


def _sample(name: str) -> str:
    return (_P2P_SAMPLES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["bandwidth_healthy.log", "bandwidth_truncated.log", "simple_p2p_passed.log"])
def test_a_p2p_check_that_shows_no_fault_is_no_failure(tmp_path: Path, name: str) -> None:
    report = analyze(write_run(tmp_path, {"p2p_check.log": _sample(name)}))
    assert report.verdict.category.value == "none"
    assert not any(e.signature and e.signature.startswith("p2p.") and e.role == "root_cause" for e in report.evidence)


def test_p2p_far_slower_than_the_staged_copy_is_p2p(tmp_path: Path) -> None:
    report = analyze(write_run(tmp_path, {"p2p_check.log": _sample("bandwidth_acs.log")}))
    assert (report.verdict.category.value, report.verdict.subcategory) == ("p2p", "p2p.iommu_acs")
    assert report.verdict.signatures[0] == "p2p.bandwidth_test_p2p_slower_than_host"
    assert (report.verdict.first_failure.file, report.verdict.first_failure.line) == ("p2p_check.log", 36)
    assert any("iommu=pt" in r for r in report.verdict.remediation)
    assert any("NCCL_P2P_DISABLE=1" in r for r in report.verdict.remediation)


def test_a_hang_next_to_a_p2p_check_that_shows_the_fault_is_p2p(tmp_path: Path) -> None:
    # the job hung in a collective with no error line; the node's P2P check, kept beside its logs,
    # shows why
    ranks = {f"rank{r}.log": f"[rank{r}] epoch 0 step 40 loss 2.0\n" + _TIMEOUT.replace("Rank 1", f"Rank {r}") for r in range(4)}
    report = analyze(write_run(tmp_path, {**ranks, "node1/p2p_check.log": _sample("bandwidth_acs.log")}))
    assert report.verdict.category.value == "p2p"
    without = analyze(write_run(tmp_path / "alone", ranks))
    assert without.verdict.category.value == "hang"


def test_data_that_a_p2p_copy_corrupted_is_p2p(tmp_path: Path) -> None:
    report = analyze(write_run(tmp_path, {"simpleP2P.log": _sample("simple_p2p_failed.log")}))
    assert (report.verdict.category.value, report.verdict.subcategory) == ("p2p", "p2p.iommu_acs")
    assert report.verdict.signatures[0] == "p2p.simple_p2p_verification_error"
    assert report.evidence[0].text == "Verification error @ element 1: val = 0.000000, ref = 4.000000"


# Open MPI 4.x on InfiniBand nodes: help texts a healthy job prints (help-mpi-btl-openib.txt), then
# the help aggregation lines of orte/util/show_help.c
OPENMPI_FINISHED = """\
--------------------------------------------------------------------------
WARNING: There was an error initializing an OpenFabrics device.

  Local host:   gpu-01
  Local device: mlx5_0
--------------------------------------------------------------------------
epoch 3 step 900 loss 1.0112
training finished
[gpu-01:41800] 7 more processes have sent help message help-mpi-btl-openib.txt / error in device init
[gpu-01:41800] Set MCA parameter "orte_base_help_aggregate" to 0 to see all help / error messages
"""


def test_a_finished_open_mpi_job_with_its_openib_warnings_is_none(tmp_path: Path) -> None:
    report = analyze(write_run(tmp_path, {"console.log": OPENMPI_FINISHED}))
    assert report.verdict.category.value == "none"
    assert not [e for e in report.evidence if e.role.value == "root_cause"]


def test_prterun_signal_9_wrapped_onto_its_own_line_is_a_sigkill(tmp_path: Path) -> None:
    # Open MPI 5.x (PRRTE's help-prun.txt [prun:proc-aborted-strsignal]) wraps before "signal"
    log = (
        "epoch 1 step 200 loss 2.1044\n"
        "--------------------------------------------------------------------------\n"
        "prterun noticed that process rank 3 with PID 41877 on node gpu-04 exited on\n"
        "signal 9 (Killed).\n"
        "--------------------------------------------------------------------------\n"
    )
    report = analyze(write_run(tmp_path, {"console.log": log}))
    assert report.verdict.category.value == "oom_cascade"
    assert report.verdict.signatures == ("oom_cascade.launcher_signal9",)
    root = next(e for e in report.evidence if e.role.value == "root_cause")
    assert (root.line, root.text) == (4, "signal 9 (Killed).")


@pytest.mark.parametrize(
    ("line", "shows"),
    [
        # Open MPI 4.x (help-errmgr-base.txt [normal-termination-but]), Slurm's srun (launch.c)
        ("Primary job  terminated normally, but 1 process returned", "a launcher reports that a process ended badly"),
        ("srun: error: node12: tasks 0-7: Exited with exit code 1", "a launcher reports that a process ended badly"),
        ("PRTE has lost communication with a remote daemon.", "a node or its launcher daemon failed"),
        ("srun: error: Node failure on node12", "a node or its launcher daemon failed"),
        ("slurmstepd: error: TaskProlog failed status=1", "a Slurm prolog or epilog failed"),
        (
            "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: "
            "cannot open shared object file: no such file or directory: unknown.",
            "the container did not get its GPUs",
        ),
    ],
)
def test_a_line_that_shows_a_failure_but_not_its_cause_is_unknown_and_says_what(tmp_path: Path, line: str, shows: str) -> None:
    report = analyze(write_run(tmp_path, {"console.log": f"epoch 0 step 10 loss 2.0975\n{line}\n"}))
    assert report.verdict.category.value == "unknown"
    assert f"what it shows: {shows}" in report.verdict.explanation
    assert report.verdict.remediation


# NCCL WARN lines and CUDA error reports in wordings no signature was written for (the words are
# NCCL's and the CUDA callers' own, the messages are made up): failures, whatever their cause
@pytest.mark.parametrize(
    "line",
    [
        "node1:3245:3301 [0] transport/foo.cc:88 NCCL WARN Call to fooBarConnect failed : Operation canceled",
        "node1:3245:3301 [0] transport/foo.cc:88 NCCL WARN NET/Foo : Got completion from peer 10.0.0.2<4020> with error 7",
        "node1:3245:3301 [0] proxy.cc:912 NCCL WARN [Proxy Service 3] Failed to execute operation Setup from rank 1, retcode 3",
        # a hint that names a debug level is no INFO record
        "node1:3245:3301 [0] enqueue.cc:99 NCCL WARN Collective setup failed on rank 3 (run with NCCL_DEBUG=INFO for details)",
        "CUDA error 999 at kernels/attn.cu:88: unknown error",
        "Failed: Cuda error /workspace/csrc/all_gather.cuh:120 'operation not permitted'",
        "cuda runtime error (46) : all CUDA-capable devices are busy or unavailable at /src/THC/THCGeneral.cpp:50",
    ],
)
def test_an_nccl_warn_or_cuda_error_in_unknown_words_is_a_failure(tmp_path: Path, line: str) -> None:
    report = analyze(write_run(tmp_path, {"console.log": f"epoch 0 step 10 loss 2.0975\n{line}\n"}))
    assert report.verdict.category.value != "none"


@pytest.mark.parametrize(
    "line",
    [
        # what NCCL prints and goes on after (net_ib's non-fatal events, the IB probe on a node
        # without IB, graph search), in NCCL's wording
        "node1:3245:3245 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
        "node1:3245:3301 [0] transport/net_ib/common.cc:179 NCCL WARN NET/IB : mlx5_0:1 Got non-fatal async event: path migration request error(7)",
        "node1:3245:3245 [0] graph/search.cc:885 NCCL WARN Could not find a path for pattern 4, falling back to simple order",
        "node1:3245:3245 [0] init.cc:211 NCCL WARN Connect failed with error 111, retrying",
        # a CUDA error as a warning, or retried
        "UserWarning: CUDA error: the timer is unavailable; kernel timings are disabled",
        "[W CUDAFunctions.cpp:110] Warning: CUDA initialization: CUDA unknown error",
        "CUDA error 2 on allocation, retrying with a smaller batch",
    ],
)
def test_an_nccl_warn_or_cuda_error_it_goes_on_after_is_no_failure(tmp_path: Path, line: str) -> None:
    report = analyze(write_run(tmp_path, {"console.log": f"epoch 0 step 10 loss 2.0975\n{line}\nepoch 0 step 20 loss 2.0911\n"}))
    assert report.verdict.category.value == "none"


_KERNEL_FAULT = (
    "Traceback (most recent call last):\n"
    '  File "/job/train.py", line 88, in <module>\n'
    "    loss.backward()\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
)


@pytest.mark.parametrize(
    ("line", "guess"),
    [
        ("RuntimeError: CUDA error: an illegal memory access was encountered", "user_code"),
        ("RuntimeError: CUDA error: misaligned address", "user_code"),
        (
            "RuntimeError: cuda runtime error (4) : unspecified launch failure at /pytorch/aten/src/THC/THCTensorCopy.cu:85",
            "hardware_xid",
        ),
        (
            "Memory access fault by GPU node-2 (Agent handle: 0x55d1c9b0a1f0) on address 0x7f3a1c000000. Reason: Page not present or supervisor privilege.",
            "user_code",
        ),
    ],
)
def test_a_kernel_fault_alone_names_no_cause(tmp_path: Path, line: str, guess: str) -> None:
    """CUDA's kernel exceptions (an illegal address, a misaligned address, an unspecified launch
    failure) and ROCm's GPU memory access fault say what happened, not why: a kernel's bug, an
    extension built for other versions, a failing GPU and broken peer access all give them. Alone
    they are `unknown`, their signature's category among the candidates, and the report says what
    would tell the causes apart."""
    log = f'Traceback (most recent call last):\n  File "/job/train.py", line 88, in <module>\n    loss.backward()\n{line}\n'
    report = analyze(write_run(tmp_path, {"train.log": log}))
    assert report.verdict.category.value == "unknown"
    assert guess in [a.category.value for a in report.alternatives]
    assert any("CUDA_LAUNCH_BLOCKING=1" in m and "Xid" in m for m in report.missing_evidence)
    assert report.evidence[0].line == 4  # the fault's own line is still the decisive one
    assert report.verdict.first_failure.line == 4
    from analyzer.report import render

    for fmt in ("text", "markdown", "html"):
        assert "Candidates" in render(report, fmt, width=100), fmt


@pytest.mark.parametrize(
    ("dmesg", "category"),
    [
        # the process's own Xid 13 (a graphics engine exception): the program's fault
        ("[ 9100.123456] NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, Graphics Exception: ESR 0x404490=0x80000002\n", "user_code"),
        # the GPU fell off the bus: the hardware's
        ("[ 9100.123456] NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, GPU has fallen off the bus.\n", "hardware_xid"),
    ],
)
def test_a_kernel_fault_with_an_xid_is_named(tmp_path: Path, dmesg: str, category: str) -> None:
    """The kernel log's Xid tells the causes of a kernel fault apart: with it the verdict names one."""
    report = analyze(write_run(tmp_path, {"train.log": _KERNEL_FAULT, "dmesg.log": dmesg}))
    assert report.verdict.category.value == category


def test_a_kernel_fault_with_a_device_assert_is_the_program(tmp_path: Path) -> None:
    """A device-side assert before the illegal address names the program's own check."""
    log = "/job/loss.cu:42: block: [0,0,0], thread: [3,0,0] Assertion `t >= 0 && t < n_classes` failed.\n" + _KERNEL_FAULT
    assert analyze(write_run(tmp_path, {"train.log": log})).verdict.category.value == "user_code"


@pytest.mark.parametrize(
    "line",
    [
        # NCCLUtils.hpp: a header's path once cut the path at `.h` and left the line unread
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, unhandled system error, NCCL version 2.14.3",
        # the version's words reworded where the log was copied
        "NCCL error in: /opt/conda/conda-bld/pytorch_1603729096996/work/torch/lib/c10d/ProcessGroupNCCL.cpp:784, unhandled system error, NCCL n 2.7.8",
    ],
)
def test_an_nccl_error_line_is_read_whatever_follows_it(tmp_path: Path, line: str) -> None:
    """PyTorch's `NCCL error in: <file>:<line>, <error>, ...` is NCCL's error code returned to its
    caller, whatever path or tail the line has: a failure, whose generic code names no cause."""
    report = analyze(write_run(tmp_path, {"train.log": line + "\n"}))
    assert report.verdict.category.value == "unknown"
    assert report.verdict.first_failure.line == 1
    assert any("NCCL_DEBUG=INFO" in m and "unhandled system error" in m for m in report.missing_evidence)
