"""analyzer.parse.crash_signature: which frames make a native crash signature, and why."""

from __future__ import annotations

from analyzer.model import Backtrace, Frame, Thread
from analyzer.parse.crash_signature import crash_signature, frame_families, normalize, quality
from analyzer.parse.gdb_backtrace import parse_text

from ..conftest import EXTERNAL


def _bt(*frames: tuple[str | None, str | None], handler_at: int | None = None) -> Backtrace:
    out = []
    for i, (function, library) in enumerate(frames):
        out.append(Frame(function=function, library=library, address=f"0x{0x1000 + i:x}", index=i))
    return Backtrace(threads=(Thread(1, 100, tuple(out)),), crash_thread=0)


LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
PY = "/usr/lib/libpython3.11.so.1.0"
TORCH = "/opt/torch/lib/libtorch_cpu.so"


def test_abort_machinery_is_skipped_and_noted() -> None:
    bt = _bt(
        ("__pthread_kill_implementation", LIBC),
        ("raise", LIBC),
        ("abort", LIBC),
        ("c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&)", TORCH),
        ("at::native::check_batch(at::Tensor const&)", TORCH),
        ("at::native::collate(at::Tensor const&)", TORCH),
        ("_PyEval_EvalFrameDefault", PY),
        ("torch::autograd::run(int)", TORCH),
        ("main", None),
    )
    sig = crash_signature(bt)
    assert sig.frames == ("at::native::check_batch", "at::native::collate", "torch::autograd::run")
    assert sig.signature == "at::native::check_batch | at::native::collate | torch::autograd::run"
    assert sig.crash_function == "at::native::check_batch" and sig.crash_library == "libtorch_cpu.so"
    assert "#1 raise: skipped (libc signal/abort machinery)" in sig.notes
    assert any("c10 check-failure plumbing" in n for n in sig.notes)
    assert "#6 _PyEval_EvalFrameDefault: skipped (CPython interpreter loop)" in sig.notes


def test_frames_above_the_signal_trampoline_belong_to_the_handler() -> None:
    bt = _bt(
        ("faulthandler_dump_traceback", PY),
        ("faulthandler_fatal_error", PY),
        ("<signal handler called>", None),
        (None, None),
        ("__memmove_avx_unaligned_erms", LIBC),
        ("at::RefcountedMapAllocator::initializeAlloc()", TORCH),
        ("start_thread", LIBC),
        ("late_frame", None),
    )
    sig = crash_signature(bt)
    assert sig.frames == ("__memmove_avx_unaligned_erms", "at::RefcountedMapAllocator::initializeAlloc")
    assert sig.notes[1] == "dropped 2 frame(s) above <signal handler called>: the handler's own"
    assert "#3 ??: skipped (no symbol)" in sig.notes
    assert "#6 start_thread: ends the signature (thread start)" in sig.notes
    assert "shm" in sig.families and "torch" in sig.families


def test_fingerprint_ignores_addresses_and_argument_types() -> None:
    a = parse_text("#0  0x00007f01 in f (x=1) at a.c:3\n#1  0x00007f02 in ns::g(int) (y=2) at a.c:9\n")
    b = parse_text("#0  0x00005501 in f (x=7) at a.c:3\n#1  0x00005502 in ns::g(long) (y=3) at b.c:1\n")
    sa, sb = crash_signature(a), crash_signature(b)
    assert sa.fingerprint == sb.fingerprint and len(sa.fingerprint) == 40
    assert sa.signature == "f | ns::g"
    c = parse_text("#0  0x00007f01 in h (x=1) at a.c:3\n")
    assert crash_signature(c).fingerprint != sa.fingerprint


def test_all_frames_skipped_falls_back_to_named_frames() -> None:
    sig = crash_signature(_bt(("raise", LIBC), ("abort", LIBC), ("malloc", LIBC)))
    assert sig.frames == ("raise", "abort", "malloc")
    assert any("falling back" in n for n in sig.notes)


def test_families() -> None:
    frames = [
        Frame(function="ncclProxyProgress", library="/usr/lib/libnccl.so.2"),
        Frame(function="cuStreamSynchronize", library="/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
        Frame(function="c10d::ProcessGroupNCCL::WorkNCCL::isCompleted()", library=TORCH),
        Frame(function="THManagedMapAllocator::THManagedMapAllocator()", library=TORCH),
    ]
    assert frame_families(frames) == ("c10d", "cuda", "nccl", "shm", "torch")
    assert frame_families([Frame(function="shm_open", library=LIBC)]) == ("libc", "shm")


def test_normalize() -> None:
    assert normalize("pthread_cond_wait@@GLIBC_2.3.2") == "pthread_cond_wait"
    assert normalize(".raise") == "raise"
    assert normalize("g_main_context_iterate.isra.0") == "g_main_context_iterate"
    assert normalize("js::T::run(void*) const") == "js::T::run"
    assert normalize("Foo::operator()") == "Foo::operator()"
    assert normalize("??") is None and normalize(None) is None


def test_quality_low_when_almost_no_symbols() -> None:
    bt = _bt((None, None), (None, None), (None, None), ("main", None))
    assert quality(bt.threads[0].frames) == 0.25
    assert any(n.startswith("low quality") for n in crash_signature(bt).notes)


def _satyr(name: str) -> str:
    return (EXTERNAL / "satyr" / "gdb_stacktraces" / name).read_text(encoding="utf-8", errors="replace")


def test_satyr_thunderbird_signature_skips_raise_and_the_handler() -> None:
    sig = crash_signature(parse_text(_satyr("rhbz-621492")))
    assert sig.crash_function == "nsTreeBodyFrame::PrefillPropertyArray"
    assert sig.frames[:2] == ("nsTreeBodyFrame::PrefillPropertyArray", "nsTreeBodyFrame::PaintColumn")
    assert sig.quality == 1.0


def test_satyr_virt_manager_signature_is_the_crash_thread() -> None:
    sig = crash_signature(parse_text(_satyr("rhbz-803600")))
    assert sig.thread_index == 1 and sig.crash_function == "validate_row"
