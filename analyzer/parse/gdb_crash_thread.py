"""Which thread of a gdb backtrace crashed.

In order, the first rule that names exactly one thread wins:
1. there is one thread;
2. the crash frame (the frame gdb printed when it loaded the core, before the thread list)
   is the top frame of one thread: same function and address, then same address (an inlined
   caller can carry another name, as in satyr's no-crash-frame-found), then same function;
3. one thread has a `<signal handler called>` frame;
4. one thread went through abort/raise/assert (satyr's exit-frame rule);
and when several threads match rule 2, the one with a signal-handler or exit frame.
Otherwise the crash thread is unknown (None).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from analyzer.model import Frame, Thread

SIGNAL_HANDLER = "<signal handler called>"
_EXIT_FUNCTIONS = frozenset(
    {
        "raise",
        "abort",
        "__assert_fail",
        "__assert_fail_base",
        "__chk_fail",
        "__stack_chk_fail",
        "__fortify_fail",
        "__libc_message",
        "__pthread_kill_implementation",
        "pthread_kill",
    }
)


def bare_name(function: str | None) -> str:
    """`.raise` / `__GI_raise` / `pthread_cond_wait@@GLIBC_2.3.2` -> comparable name."""
    name = (function or "").strip()
    name = name.split("@@", 1)[0].split("@", 1)[0]
    if name.startswith(".") and len(name) > 1:  # ppc64 function descriptors: `.raise`
        name = name[1:]
    for prefix in ("__GI_", "__libc_", "__pthread_"):
        if name.startswith(prefix) and name[len(prefix) :] in (
            "raise",
            "abort",
            "kill",
        ):
            return name[len(prefix) :]
    return name


def _same_address(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    try:
        return int(a, 16) == int(b, 16)
    except ValueError:
        return False


def _has_handler(thread: Thread) -> bool:
    return any(f.function == SIGNAL_HANDLER for f in thread.frames)


def _has_exit(thread: Thread) -> bool:
    return any(bare_name(f.function) in _EXIT_FUNCTIONS for f in thread.frames)


def _only(indices: Sequence[int]) -> int | None:
    return indices[0] if len(indices) == 1 else None


def find_crash_thread(threads: Sequence[Thread], crash_frame: Frame | None) -> int | None:
    """The index of the crash thread in `threads`, or None when the text does not say."""
    if not threads:
        return None
    if len(threads) == 1:
        return 0
    if crash_frame is not None:
        name = bare_name(crash_frame.function)
        tests: list[Callable[[Frame], bool]] = [
            lambda top: bare_name(top.function) == name and _same_address(top.address, crash_frame.address),
            lambda top: _same_address(top.address, crash_frame.address),
            lambda top: bool(name) and bare_name(top.function) == name,
        ]
        for test in tests:
            matching = [i for i, t in enumerate(threads) if t.frames and test(t.frames[0])]
            if len(matching) == 1:
                return matching[0]
            if matching:
                narrowed = [i for i in matching if _has_handler(threads[i]) or _has_exit(threads[i])]
                if len(narrowed) == 1:
                    return narrowed[0]
    by_handler = _only([i for i, t in enumerate(threads) if _has_handler(t)])
    if by_handler is not None:
        return by_handler
    return _only([i for i, t in enumerate(threads) if _has_exit(t)])
