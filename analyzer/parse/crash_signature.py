"""Crash signatures of native stacks, in the spirit of Socorro's and ClusterFuzz's.

An ordered pipeline over the crash thread's frames, innermost first: frames above a signal
trampoline belong to the handler (faulthandler, c10's) and are dropped; frames that never
explain a crash (libc abort machinery, CPython's eval loop, allocator internals, c10's
check-failure plumbing, frames without a symbol) are skipped; frames that only start threads
(main, start_thread, clone) end the walk. The top three frames left are the signature; their
normalized names (no addresses) hash to the fingerprint. Every decision leaves a note.
Imports only analyzer.model.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from analyzer.model import Backtrace, Frame
from analyzer.model.native import CrashSignature

TOP_FRAMES = 3
SIGNAL_HANDLER = "<signal handler called>"

# (reason, pattern over the normalized function name); the first that matches names the reason.
SKIP: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "signal trampoline",
        re.compile(r"^(__restore_rt|_sigtramp|__kernel_rt_sigreturn)$"),
    ),
    (
        "libc signal/abort machinery",
        re.compile(
            r"^(raise|abort|gsignal|__GI_\w+|pthread_kill|__pthread_kill\w*|__assert_fail\w*"
            r"|__libc_message|__fortify_fail|__chk_fail|__stack_chk_fail|__libc_signal_restore_set"
            r"|__kernel_vsyscall|syscall|killpg?|tgkill)$"
        ),
    ),
    (
        "C++ exception and terminate plumbing",
        re.compile(
            r"^(__cxa_throw|__cxa_rethrow|_Unwind_\w+|std::terminate|std::__terminate"
            r"|__cxxabiv1::__terminate|__gnu_cxx::__verbose_terminate_handler)$"
        ),
    ),
    (
        "c10 check-failure plumbing",
        re.compile(
            r"^c10::(detail::torch\w*Fail\w*|detail::torchCheckMsgImpl|Error::Error"
            r"|\w+Error::\w+Error|ThrowEnforceNotMet\w*|detail::torchInternalAssertFail)$"
        ),
    ),
    (
        "CPython interpreter loop",
        re.compile(
            r"^(_PyEval_\w+|PyEval_\w+|_PyObject_\w+|PyObject_Call\w*|PyObject_Vectorcall\w*"
            r"|_PyFunction_\w+|_PyVectorcall\w*|PyVectorcall_\w+|_Py_\w+|cfunction_\w+"
            r"|method_vectorcall\w*|slot_tp_\w+|vectorcall_\w+|call_function|do_call_core"
            r"|function_code_fastcall|_PyCFunction\w*|builtin_\w+|run_mod|run_eval_code_obj"
            r"|pymain_\w+|Py_RunMain|Py_BytesMain|PyRun_\w+|_PyRun_\w+|t_bootstrap|thread_run)$"
        ),
    ),
    (
        "allocator internals",
        re.compile(
            r"^(malloc|free|calloc|realloc|cfree|_int_\w+|malloc_\w+|__libc_(malloc|free|calloc|realloc)"
            r"|tcache_\w+|sysmalloc|operator new|operator delete|je_\w+|tc_\w+)$"
        ),
    ),
)
END = re.compile(
    r"^(main|start_thread|clone3?|__libc_start_main\w*|__libc_start_call_main|_start"
    r"|__clone\w*)$"
)
_SUFFIX = re.compile(r"(\.(isra|constprop|part|cold|lto_priv)(\.\d+)?)+$")

FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("nccl", re.compile(r"libnccl|(^|::)nccl\w*|\bnccl", re.IGNORECASE)),
    (
        "cuda",
        re.compile(r"libcuda|libcudart|libnvidia|(^|::)cu[A-Z]\w*|(^|::)cuda[A-Z]\w*"),
    ),
    ("c10d", re.compile(r"c10d::|ProcessGroupNCCL|ProcessGroupGloo|ProcessGroupMPI")),
    (
        "shm",
        re.compile(
            r"shm_open|shm_unlink|/dev/shm|THManagedMapAllocator|RefcountedMapAllocator"
            r"|MapAllocator|torch_shm_manager|libshm|multiprocessing"
        ),
    ),
    (
        "dataloader",
        re.compile(r"DataLoader|dataloader|_worker_loop|pin_memory", re.IGNORECASE),
    ),
    ("python", re.compile(r"libpython|^_?Py[A-Z_]|/python3?[\d.]*$")),
    ("torch", re.compile(r"libtorch|libc10|(^|::)(c10|at|torch)::")),
    ("libc", re.compile(r"/libc[.-]|/libpthread|^libc\.so")),
)


def normalize(function: str | None) -> str | None:
    """A function name as the signature uses it: no argument types, versions, clone suffixes."""
    if not function or function.strip() in ("??", ""):
        return None
    name = function.strip()
    if name == SIGNAL_HANDLER:
        return name
    name = name.split("@@", 1)[0]
    name = re.sub(r"@[A-Z][\w.]*$", "", name)
    if name.startswith(".") and len(name) > 1:
        name = name[1:]
    name = re.sub(r"\s+const$", "", name)
    name = _strip_params(name)
    name = _SUFFIX.sub("", name)
    return re.sub(r"\s+", " ", name).strip() or None


def _strip_params(name: str) -> str:
    """`ns::f(int, char*)` -> `ns::f`; keeps `operator()` and `(anonymous namespace)`."""
    if not name.endswith(")"):
        return name
    depth = 0
    for pos in range(len(name) - 1, -1, -1):
        ch = name[pos]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                head = name[:pos]
                if not head or head.endswith(("operator", "::")):
                    return name
                return head
    return name


def _skip_reason(name: str | None) -> str | None:
    if name is None:
        return "no symbol"
    for reason, pattern in SKIP:
        if pattern.match(name):
            return reason
    return None


def _label(frame: Frame) -> str:
    index = f"#{frame.index}" if frame.index is not None else "#?"
    return f"{index} {frame.function or '??'}"


def frame_families(frames: Sequence[Frame]) -> tuple[str, ...]:
    """The families the frames touch (nccl, cuda, c10d, shm, dataloader, python, torch, libc)."""
    found: set[str] = set()
    for frame in frames:
        texts = [t for t in (frame.function, frame.library, frame.file) if t]
        for family, pattern in FAMILIES:
            if any(pattern.search(t) for t in texts):
                found.add(family)
    return tuple(sorted(found))


def quality(frames: Sequence[Frame]) -> float:
    """Share of frames with a symbol (the signal trampoline does not count)."""
    counted = [f for f in frames if f.function != SIGNAL_HANDLER]
    if not counted:
        return 0.0
    named = sum(1 for f in counted if normalize(f.function) is not None)
    return round(named / len(counted), 3)


def _library_name(frame: Frame) -> str | None:
    return frame.library.rsplit("/", 1)[-1] if frame.library else None


def crash_signature(bt: Backtrace, thread_index: int | None = None) -> CrashSignature:
    """The signature of the crash thread of `bt` (or of `thread_index`)."""
    notes: list[str] = []
    index = thread_index if thread_index is not None else bt.crash_thread
    if index is None and bt.threads:
        index = 0
        notes.append("crash thread unknown: using the first thread listed")
    elif index is not None:
        t = bt.threads[index]
        notes.append(f"crash thread: #{index} (thread {t.number}, LWP {t.lwp})")
    frames = bt.threads[index].frames if index is not None else ()
    if not frames:
        notes.append("no frames: empty signature")
        return CrashSignature("", _sha1([]), (), None, None, (), 0.0, tuple(notes), index)
    handler = next((i for i, f in enumerate(frames) if f.function == SIGNAL_HANDLER), None)
    start = 0
    if handler is not None:
        if handler:
            notes.append(f"dropped {handler} frame(s) above <signal handler called>: the handler's own")
        start = handler + 1
    kept: list[tuple[str, Frame]] = []
    for frame in frames[start:]:
        name = normalize(frame.function)
        if name is not None and END.match(name):
            notes.append(f"{_label(frame)}: ends the signature (thread start)")
            break
        reason = _skip_reason(name)
        if reason:
            notes.append(f"{_label(frame)}: skipped ({reason})")
            continue
        assert name is not None
        notes.append(f"{_label(frame)}: kept as {name}")
        kept.append((name, frame))
        if len(kept) == TOP_FRAMES:
            break
    if not kept:
        named = [(n, f) for f in frames[start:] if (n := normalize(f.function))]
        kept = named[:TOP_FRAMES]
        notes.append("every frame was skipped: falling back to the top named frames" if kept else "no named frame")
    names = [n for n, _ in kept]
    first = kept[0][1] if kept else None
    q = quality(frames)
    if q < 0.5:
        notes.append(f"low quality: {q:.0%} of the frames have symbols")
    return CrashSignature(
        signature=" | ".join(names),
        fingerprint=_sha1(names),
        frames=tuple(names),
        crash_function=names[0] if names else None,
        crash_library=_library_name(first) if first else None,
        families=frame_families(frames),
        quality=q,
        notes=tuple(notes),
        thread_index=index,
    )


def _sha1(names: Sequence[str]) -> str:
    return hashlib.sha1("\n".join(names).encode("utf-8")).hexdigest()


def signature_dict(sig: CrashSignature) -> dict[str, object]:
    """The JSON shape of a signature (stable keys)."""
    return {
        "signature": sig.signature,
        "fingerprint": sig.fingerprint,
        "frames": list(sig.frames),
        "crash_function": sig.crash_function,
        "crash_library": sig.crash_library,
        "families": list(sig.families),
        "quality": sig.quality,
        "notes": list(sig.notes),
        "thread": sig.thread_index,
    }
