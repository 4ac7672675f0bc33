"""Both cores: the text files of a big run dir scanned by this process and forked workers, a large
plain file in parts, the results put together in the run dir's order so that they are those of
one process.

Tasks are whole files, or parts of a file: the CHUNK-aligned byte ranges that `iter_chunks`
reads apart, each scanned with the hits' owners kept before the caps per owner, then joined by
`Scanner.join`, which applies the caps over the whole file and numbers the lines. A block that
runs past the end of a part is finished from the start of the next one by the same worker. Where
putting the parts together could differ from one scan (a part that cannot be placed on a line
boundary, the limit of interesting lines reached, a read problem), the file is scanned again,
whole, in the main process. Parsing the hits of a file read in parts is done in the main
process, in file order; a whole file is parsed by the process that scanned it.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from analyzer.events.filescan import FileResult, finish, read_stats, scan_file
from analyzer.model import SourceKind, SourceStatus
from analyzer.parse.registry import for_source
from analyzer.scan import Scanner
from analyzer.scan.scanner import ScanResult
from analyzer.sources.discover import SourceFile
from analyzer.sources.reader import CHUNK, ReadProblem, ReadStats, iter_chunks

PARALLEL_MIN_BYTES = 64 << 20  # text bytes below which starting workers costs more than it saves
PART_BYTES = 32 << 20  # a plain file is read in parts of at least this size (when that helps)
MAX_WORKERS = 8
AHEAD = 2  # tasks queued for each pool process, so that it never waits for the next

_worker_scanner: Scanner | None = None  # set before the workers are forked


def scanned(src: SourceFile) -> bool:
    """A file read by the scan (not a core, not one that its parser reads whole)."""
    if src.status != SourceStatus.PENDING or src.kind is SourceKind.CORE_DUMP:
        return False
    parser = for_source(src.kind)
    return parser is None or parser.whole_file is None


@dataclass(frozen=True)
class _Task:
    src: SourceFile
    limit: int
    deadline: float
    start: int = 0
    stop: int | None = None  # a part: [start, stop) (None: to the end)
    part: bool = False


def _parts(src: SourceFile, piece: int, limit: int) -> list[tuple[int, int | None]]:
    """The byte ranges a file is read in: one when it is small, compressed, an archive member or
    larger than its size limit; else pieces of `piece` bytes, the last to the end."""
    if src.compression is not None or src.member is not None or src.size > limit or src.size < 2 * piece:
        return [(0, None)]
    n = src.size // piece
    return [(i * piece, (i + 1) * piece if i < n - 1 else None) for i in range(n)]


def _plan(texts: list[SourceFile], workers: int, limit: int, deadline: float) -> list[_Task]:
    total = sum(s.size for s in texts)
    # pieces small enough that every worker has several tasks, never below PART_BYTES
    piece = max(PART_BYTES, total // (workers * 4))
    piece = max(CHUNK, (piece + CHUNK - 1) // CHUNK * CHUNK)
    tasks = []
    for src in texts:
        parts = _parts(src, piece, limit)
        for start, stop in parts:
            tasks.append(_Task(src, limit, deadline, start, stop, len(parts) > 1))
    return tasks


def workers_for(sources: list[SourceFile], wanted: int | None = None) -> int:
    """How many processes to scan with: every CPU this process may use (`wanted` sets the number:
    1 turns it off), at most one per task, and 1 when the text files hold less than
    PARALLEL_MIN_BYTES."""
    texts = [s for s in sources if scanned(s)]
    if (wanted is not None and wanted <= 1) or sum(s.size for s in texts) < PARALLEL_MIN_BYTES:
        return 1
    if wanted is None:
        try:
            wanted = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            wanted = os.cpu_count() or 1
    n = max(1, min(wanted, MAX_WORKERS))
    # the file size limit does not change how many tasks there are unless files exceed it
    return max(1, min(n, len(_plan(texts, n, 1 << 62, 0.0))))


_Done = FileResult | tuple[ScanResult, ReadStats] | None


def _work(task: _Task) -> _Done:
    scanner = _worker_scanner
    assert scanner is not None
    src = task.src
    if not task.part:
        return scan_file(src, scanner, task.limit, True, task.deadline)
    stats = read_stats(True)
    path, limit, expect, follow = src.path, task.limit, src.file_id, src.via_symlink
    try:
        chunks = iter_chunks(
            path,
            None,
            stats=stats,
            limit=limit,
            deadline=task.deadline,
            expect=expect,
            follow=follow,
            start=task.start,
            stop=task.stop,
        )
        tail: Iterable[bytes] = (
            () if task.stop is None else iter_chunks(path, None, limit=limit, expect=expect, follow=follow, start=task.stop)
        )
        return scanner.scan(chunks, tail, part=True), stats
    except ReadProblem:  # the file scanned whole tells what the problem is
        return None


def _joined(src: SourceFile, task: _Task, done: list[_Done], scanner: Scanner) -> FileResult:
    """The result of one file read in parts, as one scan of it gives."""
    parts: list[ScanResult] = []
    stats = read_stats(True)
    for d in done:
        if not isinstance(d, tuple):
            return _whole(src, task, scanner)
        part, st = d
        parts.append(part)
        stats.bytes, stats.limit_hit, stats.out_of_time = st.bytes, st.limit_hit, st.out_of_time
        stats.long_lines += st.long_lines
        if st.out_of_time or st.limit_hit:  # where one read would have stopped
            break
    result = scanner.join(parts)
    if result is None:
        return _whole(src, task, scanner)
    return finish(src, result, stats)


def _whole(src: SourceFile, task: _Task, scanner: Scanner) -> FileResult:
    return scan_file(src, scanner, task.limit, True, task.deadline)  # a read problem becomes its note there


def _per_file(tasks: list[_Task], done: Iterator[_Done], scanner: Scanner) -> Iterator[FileResult]:
    i = 0
    while i < len(tasks):
        task = tasks[i]
        if not task.part:
            result = next(done)
            assert isinstance(result, FileResult)
            yield result
            i += 1
            continue
        j = i
        while j < len(tasks) and tasks[j].part and tasks[j].src is task.src:
            j += 1
        yield _joined(task.src, task, [next(done) for _ in range(j - i)], scanner)
        i = j


@contextmanager
def read_ahead(
    sources: list[SourceFile], scanner: Scanner, workers: int, limit: int, deadline: float
) -> Iterator[Iterator[FileResult] | None]:
    """Each scanned file's result, in the order of `sources`, computed by `workers` processes
    (this one and `workers - 1` forked ones); None when one process reads them (one worker asked for, no fork, or inside a
    daemon process: triage runs analyses in pools, whose workers may not have children)."""
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods() or multiprocessing.current_process().daemon:
        yield None
        return
    global _worker_scanner
    _worker_scanner = scanner
    texts = [s for s in sources if scanned(s)]
    tasks = _plan(texts, workers, limit, deadline)
    try:
        pool = multiprocessing.get_context("fork").Pool(workers - 1)
    except (OSError, AssertionError):  # no processes to be had: one process reads it all
        yield None
        return
    try:
        yield _per_file(tasks, _shared(tasks, workers, pool), scanner)
    finally:
        pool.terminate()
        pool.join()


def _shared(tasks: list[_Task], workers: int, pool: Any) -> Iterator[_Done]:
    """The tasks' results in order. The pool's `workers - 1` processes are kept fed with the
    next unclaimed tasks (AHEAD each); this process, when the result it needs next is not ready,
    takes the next unclaimed task itself instead of waiting (it is one of the workers, and also
    parses every result: a fixed share would leave it behind or idle)."""
    n = len(tasks)
    done: dict[int, _Done] = {}
    pending: dict[int, Any] = {}
    claimed = 0
    in_flight = AHEAD * (workers - 1)
    for i in range(n):
        while i not in done:
            while len(pending) < in_flight and claimed < n:  # the pool kept fed, also between this process's own tasks
                pending[claimed] = pool.apply_async(_work, (tasks[claimed],))
                claimed += 1
            waiting = pending.get(i)
            if waiting is not None and (waiting.ready() or claimed >= n):
                done[i] = waiting.get()
                del pending[i]
            elif claimed < n:
                done[claimed] = _work(tasks[claimed])
                claimed += 1
            else:  # pragma: no cover - every task is claimed, so i is pending or done
                raise AssertionError(f"task {i} was never claimed")
        yield done.pop(i)
