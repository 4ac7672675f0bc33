"""Python tracebacks: satyr's real files and the figures satyr's own tests assert, chains,
and tracebacks interleaved with other ranks' lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.parse.base import Region
from analyzer.parse.python_traceback import parse_region, parse_text

SATYR_FILES = ["python-01", "python-02", "python-03", "python-04", "python-05", "python-06"]


@pytest.mark.parametrize("name", SATYR_FILES)
def test_every_satyr_python_file_parses(external: Path, name: str) -> None:
    text = (external / "satyr/python_stacktraces" / name).read_text()
    tbs = parse_text(text)
    assert len(tbs) == 1
    assert tbs[0].frames, name


def test_satyr_python_01_figures(external: Path) -> None:
    tb = parse_text((external / "satyr/python_stacktraces/python-01").read_text())[0]
    assert len(tb.frames) == 11
    assert tb.exception.type == "AttributeError"
    assert tb.exception.message == "'NoneType' object has no attribute 'rsplit'"


def test_satyr_python_03_frame_order(external: Path) -> None:
    tb = parse_text((external / "satyr/python_stacktraces/python-03").read_text())[0]
    # innermost first, as satyr orders them
    assert (tb.frames[0].file, tb.frames[0].function) == ("<string>", "<module>")
    assert (tb.frames[1].file, tb.frames[1].function) == ("./test.py", "f")
    assert tb.frames[1].line == 4


def test_syntax_error_without_header(external: Path) -> None:
    tb = parse_text((external / "satyr/python_stacktraces/python-04").read_text())[0]
    assert tb.exception.type == "SyntaxError"
    assert tb.frames[0].file == "/usr/bin/python3-mako-render"
    assert tb.frames[0].line == 43
    assert tb.frames[0].function is None


# two ranks' tracebacks interleaved, as a torchrun console shows them (shape of real torchrun output)
INTERLEAVED = """\
[rank1]: Traceback (most recent call last):
[rank0]: Traceback (most recent call last):
[rank1]:   File "/job/train.py", line 88, in <module>
[rank0]:   File "/job/train.py", line 88, in <module>
[rank1]:     main()
[rank0]:     main()
[rank1]:   File "/job/train.py", line 61, in main
[rank1]:     loss = model(batch).sum()
[rank0]:   File "/job/train.py", line 70, in main
[rank0]:     dist.all_reduce(t)
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
[rank0]: RuntimeError: NCCL communicator was aborted on rank 0.
"""


def test_interleaved_ranks_are_separated() -> None:
    lines = tuple(INTERLEAVED.splitlines())
    ev1 = parse_region(Region("console.log", 1, lines, "python_traceback"))[0]
    ev0 = parse_region(Region("console.log", 2, lines[1:], "python_traceback"))[0]
    assert ev1.rank == 1 and ev1.fields["exception_type"] == "torch.OutOfMemoryError"
    assert ev1.loc.line == 11  # the exception line of rank 1
    assert ev1.fields["frame_functions"] == ["main", "<module>"]
    assert ev0.rank == 0 and ev0.fields["exception_type"] == "RuntimeError"
    assert ev0.loc.line == 12


CHAINED = """\
Traceback (most recent call last):
  File "a.py", line 3, in load
    return json.load(f)
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "a.py", line 9, in <module>
    load()
ValueError: bad config
"""


def test_chained_tracebacks() -> None:
    (tb,) = parse_text(CHAINED)
    assert tb.exception.type == "ValueError"
    assert tb.chain_kind == "context"
    assert tb.chained[0].exception.type == "json.decoder.JSONDecodeError"


def test_multiline_message_continuation() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "t.py", line 1, in <module>\n'
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
        "2024-01-01 00:00:00 INFO next record\n"
    )
    (tb,) = parse_text(text)
    assert tb.exception.message.startswith("CUDA error: an illegal memory access")
    assert "asynchronously reported" in tb.exception.message
    assert "next record" not in tb.exception.message


def test_garbage_never_raises() -> None:
    for text in [
        "Traceback (most recent call last):\n",
        "Traceback (most recent call last):\n\x00\x01\n",
        '  File "x", line 1\n' * 3,
    ]:
        parse_text(text)


def test_frames_that_lost_their_indentation() -> None:
    """A traceback pasted where leading blanks were dropped: its frames and source lines are still
    frames, and its exception line is still the exception (a source line of one word is not)."""
    text = (
        "Traceback (most recent call last):\n"
        'File "/home/u/train.py", line 14, in <module>\n'
        "main()\n"
        'File "/home/u/train.py", line 5, in main\n'
        "warnings.warn\n"
        'File "/usr/lib/python3.10/site-packages/lib.py", line 9, in run\n'
        "ValueError: Attempting to unscale FP16 gradients.\n"
    )
    (tb,) = parse_text(text)
    assert tb.exception.type == "ValueError"
    assert tb.exception.message == "Attempting to unscale FP16 gradients."
    assert [(f.file, f.line, f.source) for f in tb.frames] == [
        ("/usr/lib/python3.10/site-packages/lib.py", 9, None),
        ("/home/u/train.py", 5, "warnings.warn"),
        ("/home/u/train.py", 14, "main()"),
    ]


def test_cut_traceback_without_indentation_is_cut() -> None:
    """Such a traceback that the log ends in, before its exception line, is a cut traceback."""
    lines = [
        "Running tokenizer on dataset:  47%| | 1695000/3634744 [30:09<33:25, 967.30 examples/s]",
        "Traceback (most recent call last):",
        'File "/home/u/src/train_bash.py", line 14, in',
        "main()",
        'File "/home/u/src/train_bash.py", line 5, in main',
        "run_exp()",
    ]
    (ev,) = parse_region(Region("train.log", 2, tuple(lines[1:]), "python_traceback"))
    assert ev.fields.get("cut_traceback") is True
    assert ev.end_line == 6


def test_rays_wrapped_exception_names_its_cause() -> None:
    """Ray re-raises a task's error as `RayTaskError(<cause>)`: that is the exception line."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/ray/_private/worker.py", line 937, in get_objects\n'
        "    raise value.as_instanceof_cause()\n"
        "ray.exceptions.RayTaskError(DistBackendError): ray::TrainRayActor.train() (pid=4242, ip=10.0.0.3)\n"
    )
    (tb,) = parse_text(text)
    assert tb.exception.type == "ray.exceptions.RayTaskError(DistBackendError)"
    assert tb.exception.message.startswith("ray::TrainRayActor.train()")
    # a call in parentheses is no exception line
    assert parse_text('Traceback (most recent call last):\n  File "a.py", line 1, in x\nprint(x)\n') == []


def test_headerless_fragment_the_log_ends_in_is_a_cut_traceback() -> None:
    """Frames whose traceback header was cut off, and the log ends in them: an exception was on its
    way out; the event takes the first line's prefix (pid, time) and its own text."""
    prefix = "(Worker_TP1 pid=912664) ERROR 05-29 16:44:33 [multiproc_executor.py:874] "
    lines = [
        prefix + '  File "/venv/vllm/lamport_workspace.py", line 300, in get_allreduce_workspace',
        prefix + "    ws = LamportWorkspace(rank, world_size, comm_size, process_group)",
        prefix + '  File "/venv/vllm/lamport_workspace.py", line 185, in init',
        prefix + "    self._lamport = IpcBuffer(rank, world_size, lamport_total, process_group)",
    ]
    (ev,) = parse_region(Region("train.log", 4, tuple(lines), "python_traceback"))
    assert ev.fields.get("cut_traceback") is True
    assert (ev.end_line, ev.pid, ev.time_text) == (7, 912664, "05-29 16:44:33")
    assert ev.message.startswith('File "/venv/vllm/lamport_workspace.py", line 300')


def test_printed_stack_in_the_middle_of_a_log_is_no_traceback() -> None:
    """Frames without a header or an exception line that the log goes on after (a stack printed by
    traceback.print_stack, say) make no event: nothing says an exception was raised."""
    lines = [
        '  File "/home/u/train.py", line 14, in <module>',
        "    main()",
        '  File "/home/u/train.py", line 5, in main',
        "    traceback.print_stack()",
        "epoch 3 step 200 loss 0.41",
        "epoch 3 step 300 loss 0.40",
    ]
    (ev,) = parse_region(Region("train.log", 1, tuple(lines), "python_traceback"))
    assert ev.kind.value == "unparsed" and "cut_traceback" not in ev.fields and ev.end_line == 4
    # with an exception line after the frames it is a traceback, header or not
    whole = [*lines[:4], "RuntimeError: boom"]
    (ev,) = parse_region(Region("train.log", 1, tuple(whole), "python_traceback"))
    assert ev.kind.value == "traceback" and ev.message == "RuntimeError: boom"


def test_message_of_titled_indented_sections_is_one_message() -> None:
    """An exception message laid out as titled sections of indented lines (Ray's version check)
    is one message, and the log going on after it is not read as the process going on."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/ray/python/ray/services.py", line 325, in check_version_info\n'
        '    "    Cloudpickle: " + version_info[3])\n'
        "Exception: Version mismatch: The cluster was started with:\n"
        "    Ray: 0.2.2\n"
        "    Python: 3.5.2\n"
        "This process on node 10.0.0.2 was started with:\n"
        "    Ray: 0.2.2\n"
        "    Python: 3.6.1\n"
        "worker exited\n"
    )
    (tb,) = parse_text(text)
    assert tb.exception.message.endswith("This process on node 10.0.0.2 was started with:\n    Ray: 0.2.2\n    Python: 3.6.1")


def test_ipython_tracebacks_before_and_since_8() -> None:
    """IPython's verbose traceback: the type in the header, frames as `<file> in <func>(...)` (7.x) or
    `File <file>:<line>, in <func>(...)` / `Cell In[n], line m` (8.x), the exception line last."""
    old = [
        "---------------------------------------------------------------------------",
        "RuntimeError                              Traceback (most recent call last)",
        "<ipython-input-3-1f2e> in <module>()",
        "----> 1 model.cuda()",
        "",
        "/opt/conda/lib/python3.7/site-packages/torch/nn/modules/module.py in cuda(self, device)",
        "    457         return self._apply(lambda t: t.cuda(device))",
        "",
        "RuntimeError: CUDA error: out of memory",
        "next cell output",
    ]
    (ev,) = parse_region(Region("nb.log", 2, tuple(old[1:]), "python_traceback"))
    assert ev.kind.value == "traceback" and ev.message == "RuntimeError: CUDA error: out of memory"
    assert ev.loc.line == 9 and ev.fields["frame_functions"] == ["cuda", "<module>"]
    new = [
        "OutOfMemoryError                          Traceback (most recent call last)",
        "Cell In[4], line 2",
        "      1 x = torch.empty(1 << 40, device='cuda')",
        "File /opt/conda/lib/python3.11/site-packages/torch/cuda/memory.py:12, in alloc(n)",
        "---> 12     return torch.empty(n, device='cuda')",
        "",
        "OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 GiB.",
    ]
    (ev,) = parse_region(Region("nb.log", 1, tuple(new), "python_traceback"))
    assert ev.fields["exception_type"] == "OutOfMemoryError"
    assert ev.fields["frames"][0] == "/opt/conda/lib/python3.11/site-packages/torch/cuda/memory.py:12 alloc"
    # a header whose exception line never comes, the log going on: nothing
    assert parse_region(Region("nb.log", 1, (new[0], new[1], "some other output", "more output"), "python_traceback")) == []
