"""Cues (signatures/cues.yaml, analyzer/classify/cues.py): a failure in words no signature knows is
named by the cause its words name, capped and said to be so; the closed vocabularies, records of
a lower level, retries and lines that say the program goes on are left alone; a traceback the
log ends in and an error record that ends a log are failures.

The lines are in the wording of programs no signature was written for, built from the emitters'
vocabulary (glibc's strerror texts, the dynamic loader, HTTP status lines)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.classify.combine import CUE_CAP
from analyzer.classify.cues import CUE_PREFIX
from analyzer.pipeline import analyze
from analyzer.signatures.cues import cues, strongest, validate_cue_table

from ..conftest import write_run

STEP = "[rank0] epoch 0 step 10 loss 2.0975\n"


def test_the_cue_table_is_valid_and_its_tests_pass() -> None:
    assert validate_cue_table() == []
    ids = [c.id for c in cues()]
    assert len(ids) == len(set(ids)) and len(ids) >= 15
    assert {c.category.value for c in cues()} >= {
        "shm",
        "p2p",
        "oom_cascade",
        "version_mismatch",
        "hardware_xid",
        "network",
        "hang",
        "storage",
        "scheduler",
        "user_code",
    }


def test_the_narrower_words_win_a_tie() -> None:
    # "shared memory" and "No space left on device" are both cues of weight 1: /dev/shm is listed first
    line = "RuntimeError: unable to write to file </torch_18692_1954506624>: No space left on device (28)"
    found = strongest(line)
    assert found is not None and found[0].id == "shm.shared_memory_words"


@pytest.mark.parametrize(
    ("line", "category"),
    [
        # an extension loader's own wording: its words (the loader's "cannot open shared object file")
        ("ImportError: libfoo_ops.so: cannot open shared object file: No such file or directory", "version_mismatch"),
        ("fatal: worker 3 could not map the shared memory region: Bus error", "shm"),
        ("FATAL: Bus error while loading the shared library in worker 3", "shm"),
        ("ERROR: the shard writer stopped: the disk is full", "storage"),
        ("RuntimeError: DataStore client: Connection refused by 10.0.0.7:29400", "network"),
        ("ERROR: shard 4 download stopped: 504 Gateway Time-out", "network"),
        ("ERROR: upload of shard 3 stopped: 503 Service Unavailable", "network"),
        ("mylib.AllocError: device allocator ran out of memory (requested 2.0 GiB)", "oom_cascade"),
        ("ERROR: rank 3 is stuck in the allreduce; aborting", "hang"),
        ("CustomOpError: this kernel has no binary for sm_90; rebuild it for your GPU", "version_mismatch"),
    ],
)
def test_a_failure_in_unseen_words_is_named_by_its_cue(tmp_path: Path, line: str, category: str) -> None:
    report = analyze(write_run(tmp_path, {"rank0.log": f"{STEP}{line}\n"}))
    v = report.verdict
    assert v.category.value == category
    assert 0.3 <= v.confidence <= CUE_CAP
    assert "no signature names the cause" in v.title
    assert (v.first_failure.file, v.first_failure.line) == ("rank0.log", 2)
    root = [e for e in report.evidence if e.role.value == "root_cause"]
    assert root and root[0].signature and root[0].signature.startswith(CUE_PREFIX)
    assert root[0].text == line and root[0].line == 2
    assert v.remediation


@pytest.mark.parametrize(
    "line",
    [
        # the closed vocabularies were judged message by message: their undecidable codes stay unknown
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version 2.7.8",
        'CUDA error at train.cu:42 code=999(cudaErrorUnknown) "cudaDeviceSynchronize()"',
        # vLLM's RPC is not a collective
        "ERROR 08-14 12:08:39 [core.py:654] Invocation of collective_rpc method failed",
    ],
)
def test_words_that_name_no_cause_stay_unknown(tmp_path: Path, line: str) -> None:
    report = analyze(write_run(tmp_path, {"rank0.log": f"{STEP}{line}\n"}))
    assert report.verdict.category.value == "unknown"


@pytest.mark.parametrize(
    "line",
    [
        # lower levels, retries and a program that goes on: no failure
        "2024-05-01 10:00:00,001 INFO reader: Connection refused by the metrics endpoint, metrics disabled",
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [node1]:29500 (errno: 111 - Connection refused).",
        "Retrying (Retry(total=4)) after connection broken by 'NewConnectionError(Connection refused)'",
        "Installed CUDA version 12.4 does not match the version torch was compiled with 12.1 but since the APIs are compatible, accepting this combination",
        "[I1201 00:27:51.422352527 TCPStoreLibUvBackend.cpp:130] [c10d - debug] Remote peer closed the connection.",
    ],
)
def test_words_of_a_survived_or_lower_level_line_are_no_failure(tmp_path: Path, line: str) -> None:
    report = analyze(write_run(tmp_path, {"rank0.log": f"{STEP}{line}\n{STEP * 4}"}))
    assert report.verdict.category.value == "none"


FRAMES = 'Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n    main()\n'


def test_a_traceback_the_log_ends_in_is_a_failure_of_unknown_cause(tmp_path: Path) -> None:
    report = analyze(write_run(tmp_path, {"rank0.log": f"{STEP}{FRAMES}"}))
    assert report.verdict.category.value == "unknown"
    assert report.verdict.first_failure.line == 2
    # the same lines, and the process went on: what was cut is not the end
    report = analyze(write_run(tmp_path / "on", {"rank0.log": f"{STEP}{FRAMES}{STEP}{STEP}"}))
    assert report.verdict.category.value == "none"


def test_an_error_record_that_ends_the_log_is_a_failure(tmp_path: Path) -> None:
    record = "2025-08-14 12:08:39,101 - trainer - ERROR - the weight sync with the rollout server failed"
    report = analyze(write_run(tmp_path, {"rank0.log": f"{STEP}{record}\n"}))
    assert report.verdict.category.value == "unknown"
    assert report.verdict.first_failure.line == 2
    # the same record, and the job goes on: a failure it survived
    report = analyze(write_run(tmp_path / "on", {"rank0.log": f"{STEP}{record}\n{STEP}{STEP}{STEP}{STEP}"}))
    assert report.verdict.category.value == "none"


def test_signatures_check_lists_every_issue_of_a_broken_cue_table(tmp_path: Path) -> None:
    import shutil

    from analyzer.paths import signatures_dir

    root = tmp_path / "signatures"
    shutil.copytree(signatures_dir(), root)
    (root / "cues.yaml").write_text(
        "cues:\n"
        "  - {id: shm.bad_regex, category: shm, weight: 0.5, says_failure: false, re: '(unclosed',\n"
        "     source: x, remediation: [], tests: {match: [a]}}\n"
        "  - {id: nowhere.words, category: nowhere, weight: 2, says_failure: false, re: 'x',\n"
        "     source: x, remediation: [], tests: {match: [x]}}\n"
        "  - {id: storage.words, category: storage, weight: 0.5, says_failure: true, re: 'disk full',\n"
        "     source: x, remediation: [], tests: {match: ['quota exceeded'], no_match: ['the disk full of data']}}\n",
        encoding="utf-8",
    )
    problems = [str(p) for p in validate_cue_table(root)]
    assert any("cue shm.bad_regex" in p and "regex does not compile" in p and ":2:" in p for p in problems)
    assert any("cue nowhere.words" in p and "not a cause category" in p for p in problems)
    assert any("cue nowhere.words" in p and "weight" in p for p in problems)
    assert any("cue storage.words" in p and "match test does not match" in p for p in problems)
    assert any("cue storage.words" in p and "no_match test matches" in p for p in problems)
