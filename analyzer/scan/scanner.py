"""One compiled multi-pattern pass per file.

The patterns are the parsers' triggers and the signatures' line patterns, both declared next to
what uses them; this module keeps no list of its own. Files come in chunks (256 KiB) that end on
line boundaries, so a file is read once and memory stays flat whatever its size.

Two engines find the candidate lines of a chunk, with the same results:

* Hyperscan (when the `hyperscan` package imports): every pattern in one block-mode database,
  one scan per chunk. A pattern Hyperscan rejects (lookarounds, backreferences, ...) is compiled
  in its prefilter mode (a looser automaton, so a superset of the lines); one it rejects even so
  is left to the Python matcher of `portable.py` (`Scanner.python_only`).
* Python (always available): each pattern's required literals (`literals.py`) are looked for in
  the chunk, through a small vocabulary of shared substrings so that a chunk costs a few dozen
  `in` tests; only the lines holding a literal are looked at, and only with the patterns whose
  literal they hold. A pattern without a usable literal is searched with `re` over the chunk.

Either way a candidate line is then decoded and checked with the Python regular expressions of
its candidate patterns only (all patterns for a line that is not plain ASCII, ends in CR or was
cut, where `str` and `bytes` semantics may differ): those decide the owners, so both engines
agree. A line longer than MAX_LINE is scanned, and kept, up to MAX_LINE bytes only.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyzer.cachefile import read_entry, read_json, write_entry, write_json
from analyzer.paths import cache_dir
from analyzer.scan.lines import added_before, needs_view, terminal_view, view_offset
from analyzer.scan.portable import PyMatcher

_hs: Any
try:  # optional: the portable engine works without it
    import hyperscan as _hs
except Exception:  # ImportError, or a wheel that does not load on this CPU
    _hs = None

log = logging.getLogger(__name__)

MAX_LINE = 65536  # longer lines are cut before parsing (and before scanning)
MAX_REGIONS = 20000  # per file; beyond that the scan keeps counting but stops collecting

HAVE_HYPERSCAN = _hs is not None
ENGINES = ("hyperscan", "python")


@dataclass(frozen=True, slots=True)
class Pattern:
    regex: str  # Python `re` syntax over one line
    owner: str  # the parser stem, or "signatures"
    block: int = 0  # following lines to capture
    ignore_case: bool = False
    # within this many lines of its owner's previous hit, a line this pattern matches is not
    # that owner's hit (it continues the previous one's block: parse.base.Trigger.continues)
    continues: int = 0


class _Following:
    """The decoded lines of one buffer, from the line starts that hits' blocks ask for, each line
    decoded once however many blocks hold it (a log of many tracebacks has a block per header,
    and the blocks overlap). The starts asked for never go back: the hits come in file order."""

    __slots__ = ("buf", "index", "next_pos", "texts")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.texts: list[str] = []  # consecutive lines, from the first start asked for
        self.index: dict[int, int] = {}  # line start -> its place in texts
        self.next_pos = -1  # where the line after the last one decoded starts

    def take(self, pos: int, n: int) -> list[str]:
        """Up to n lines from `pos` (fewer where the buffer ends first)."""
        at = self.index.get(pos)
        if at is None:  # past what was decoded: begin again there (no earlier start is asked for)
            self.texts, self.index, self.next_pos = [], {}, pos
            at = 0
        buf, texts, index = self.buf, self.texts, self.index
        p = self.next_pos
        while len(texts) < at + n and p < len(buf):
            end = buf.find(b"\n", p)
            end = len(buf) if end < 0 else end
            index[p] = len(texts)
            texts.append(_decode(buf[p:end])[0])
            p = end + 1
        self.next_pos = p
        return texts[at : at + n]


@dataclass(slots=True)
class Hit:
    line_no: int
    owners: tuple[str, ...]
    lines: list[str]  # the matching line, then the captured following lines
    want: int  # lines still to capture


@dataclass(slots=True)
class ScanResult:
    hits: list[Hit] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    dropped: int = 0  # hits beyond MAX_REGIONS in the chunk that reached it
    long_lines: int = 0
    capped_at: int = 0  # the line where MAX_REGIONS was reached (0: never)
    not_examined: int = 0  # lines after the chunk that reached MAX_REGIONS, not looked at
    uncapped: list[tuple[str, ...]] = field(default_factory=list)  # a part's scan: each hit's owners before the caps per owner


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
# Python-only syntax that Hyperscan would read differently: `{,n}`, `\A`/`\Z`
# ... and a character class holding a non-ASCII character: Hyperscan (not in UTF-8 mode) reads
# it as a class of single bytes
_PY_ONLY_SYNTAX = re.compile(r"(?<!\\)\{,|\\[AZ]|(?<!\\)\[(?:\\.|[^\]\\])*[^\x00-\x7f]")
# constructs Hyperscan rejects outside its prefilter mode: lookarounds, backreferences, atomic
# groups, possessive quantifiers, conditionals (a quick test; the compiler has the last word)
_HS_SUSPECT = re.compile(r"\(\?<?[=!]|\(\?P=|\\[1-9]|\(\?>|[*+?}]\+|\(\?\(")
# constructs that can match a newline: such a pattern may match several lines together
_CAN_MATCH_NEWLINE = re.compile(r"\\[sWDn]|\[\^|\(\?[a-zA-Z]*s")
CROSS_LINES = 8  # lines either side looked at for a match that runs over several lines
CROSS_BYTES = 16384
# ASCII characters that are `\s` for `str` patterns but not for `bytes` ones
_STR_ONLY_SPACE = re.compile("[\x1c-\x1f]")


_NEVER = re.compile(r"(?!)")

# what `lines._glued` looks for (a progress bar with a message glued after it), loosened into a
# superset that Hyperscan finds in the same pass as the patterns: a chunk with progress bars but
# no match of these shows as it is, so the (per-bar, costly) exact search runs only on the chunks
# that may need it
_GLUED_HINTS = (rb"%\|[^|\n\r]*\| ?[A-Za-z]", rb"<[^\]\n\r]*\] ?[A-Za-z]")


class _LazyRegexes:
    """`[i]`: pattern i compiled for str lines on first use (a never-matching one if invalid)."""

    def __init__(self, patterns: list[Pattern], plain: list[str]) -> None:
        self._patterns = patterns
        self._plain = plain
        self._compiled: dict[int, re.Pattern[str]] = {}

    def __getitem__(self, i: int) -> re.Pattern[str]:
        rx = self._compiled.get(i)
        if rx is None:
            p = self._patterns[i]
            flag = "(?i:" if p.ignore_case else "(?:"
            try:
                rx = re.compile(flag + self._plain[i] + ")")
            except re.error:
                rx = _NEVER
            self._compiled[i] = rx
        return rx


def _newlines(chunk: bytes) -> int:
    """chunk.count(b"\n"), about twice as fast on lines of usual length: `count` tests byte by
    byte, while `replace` jumps from one newline to the next with memchr and copies the rest in
    blocks (which loses on very short lines: a sample decides)."""
    if len(chunk) < 1 << 16 or chunk.count(b"\n", 0, 1 << 14) > (1 << 14) // 48:
        return chunk.count(b"\n")
    return len(chunk) - len(chunk.replace(b"\n", b""))


def _decode(raw: bytes) -> tuple[str, bool]:
    cut = len(raw) > MAX_LINE
    if cut:
        raw = raw[:MAX_LINE]
    return raw.decode("utf-8", errors="replace").rstrip("\r\n"), cut


def _bound_long_lines(chunk: bytes) -> tuple[bytes, set[int]]:
    """The chunk with every line longer than MAX_LINE cut to MAX_LINE bytes (newlines kept, so
    line numbers hold), and the offsets in the result where the cut lines start.

    A line of MAX_LINE bytes or more holds a whole aligned window of MAX_LINE // 2 bytes, so only
    windows without a newline are looked at: a few dozen `find` calls per MiB otherwise.
    """
    w = MAX_LINE // 2
    n = len(chunk)
    if n <= MAX_LINE:
        return chunk, set()
    pieces: list[bytes] = []
    starts: set[int] = set()
    kept = 0  # end of what has been copied into pieces
    out_len = 0
    p = 0
    while p < n:
        if chunk.find(b"\n", p, p + w) >= 0:
            p += w
            continue
        s = chunk.rfind(b"\n", 0, p) + 1
        e = chunk.find(b"\n", p + w)
        e = n if e < 0 else e
        if e - s > MAX_LINE:
            pieces.append(chunk[kept : s + MAX_LINE])
            out_len += s + MAX_LINE - kept
            starts.add(out_len - MAX_LINE)
            kept = e
        p = (e // w + 1) * w
    if not pieces:
        return chunk, set()
    pieces.append(chunk[kept:])
    return b"".join(pieces), starts


# --- Hyperscan databases in the private cache ---------------------------------------------------


def _load_db(directory: Path, key: str) -> tuple[Any, dict[str, Any]] | None:
    """A cached database and its entry, only after the entry passed its checks (owner, mode,
    content hash: see analyzer.cachefile); a native database is never handed to Hyperscan unchecked."""
    assert _hs is not None
    meta = read_json(directory, f"{key}.json")
    if not isinstance(meta, dict) or meta.get("sha256") is None:
        return None
    raw = read_entry(directory, f"{key}.hsdb")
    if raw is None or hashlib.sha256(raw).hexdigest() != meta["sha256"]:
        return None
    try:
        return _hs.loadb(raw, _hs.HS_MODE_BLOCK), meta
    except _hs.error:
        return None


def _save_db(directory: Path, key: str, db: Any, meta: dict[str, Any]) -> None:
    """The database into the cache, its entry (`meta` and the content hash) next to it."""
    assert _hs is not None
    try:
        raw = _hs.dumpb(db)
    except _hs.error:
        return
    write_entry(directory, f"{key}.hsdb", raw)
    write_json(directory, f"{key}.json", {**meta, "sha256": hashlib.sha256(raw).hexdigest()})


# --- the scanner -------------------------------------------------------------------------------


class Scanner:
    """Compiled once per analysis from all declared patterns.

    `engine`: "hyperscan", "python", or None for Hyperscan when it imports, else Python.
    """

    def __init__(self, patterns: Iterable[Pattern], caps: dict[str, int] | None = None, engine: str | None = None) -> None:
        self.caps = dict(caps or {})  # owner -> most hits kept per file (for broad, low-value patterns)
        self.patterns = list(patterns)
        # named groups of different patterns would collide in one database or expression: every
        # engine works on these plain forms
        self._plain = [_NAMED_GROUP.sub("(?:", p.regex) for p in self.patterns]
        # each pattern's Python form is compiled when a line first needs it: most never do, and
        # compiling hundreds up front was most of a small analysis. A pattern that does not
        # compile never matches.
        self._str_res = _LazyRegexes(self.patterns, self._plain)
        self._owner_ix: dict[str, int] = {}
        for p in self.patterns:
            self._owner_ix.setdefault(p.owner, len(self._owner_ix))
        self._pat_owner = [self._owner_ix[p.owner] for p in self.patterns]
        self._owner_names = list(self._owner_ix)
        self._all_ids = frozenset(range(len(self.patterns)))
        # (pattern id, its owner's name, how near) of the patterns that continue their owner's hits
        self._continuing = [(i, p.owner, p.continues) for i, p in enumerate(self.patterns) if p.continues]
        self._run_owners = frozenset(owner for _, owner, _ in self._continuing)
        self._multiline = [bool(_CAN_MATCH_NEWLINE.search(p.regex)) for p in self.patterns]
        self._bytes_res: dict[int, re.Pattern[bytes]] = {}

        if engine is None:
            engine = "hyperscan" if HAVE_HYPERSCAN else "python"
        if engine not in ENGINES:
            raise ValueError(f"unknown scan engine {engine!r}")
        if engine == "hyperscan" and not HAVE_HYPERSCAN:
            raise RuntimeError("the hyperscan package is not available")
        self.engine = engine
        self.prefiltered: list[Pattern] = []  # compiled in Hyperscan's prefilter mode
        self.python_only: list[Pattern] = []  # left to the Python matcher although Hyperscan is used
        self._hs_db: Any = None
        self._hs_scratch: Any = None
        self._hs_hinted: Any = None  # (database, scratch) with _GLUED_HINTS too, built on first use; False: none
        py_items: list[tuple[int, Pattern, bytes]] = []
        if engine == "hyperscan":
            py_ids = self._build_hyperscan()
        else:
            py_ids = list(range(len(self.patterns)))
        for i in py_ids:
            py_items.append((i, self.patterns[i], self._plain[i].encode("utf-8")))
        self._py = PyMatcher(py_items) if py_items else None

    # -- Hyperscan

    def _build_hyperscan(self) -> list[int]:
        """Compile what Hyperscan takes (or load it from the private cache); the ids of the
        patterns left to Python."""
        assert _hs is not None
        key = hashlib.sha256(
            repr((getattr(_hs, "__version__", ""), [(p.regex, p.ignore_case) for p in self.patterns])).encode()
        ).hexdigest()[:24]
        directory = cache_dir("scan")
        cached = self._load_hs(directory, key) if directory else None
        if cached is not None:
            return cached
        left = self._compile_hyperscan()
        if directory is not None and self._hs_db is not None:
            self._save_hs(directory, key, left)
        return left

    def _load_hs(self, directory: Path, key: str) -> list[int] | None:
        """The cached database (see _load_db) with what its entry says was left to Python."""
        assert _hs is not None
        loaded = _load_db(directory, key)
        if loaded is None:
            return None
        db, meta = loaded
        try:
            prefiltered = [self.patterns[int(i)] for i in meta["prefiltered"]]
            left = [int(i) for i in meta["left"]]
            python_only = [self.patterns[i] for i in left]
            scratch = _hs.Scratch(db)
        except (ValueError, KeyError, TypeError, IndexError, _hs.error):
            return None
        self._hs_db, self._hs_scratch = db, scratch
        self.prefiltered, self.python_only = prefiltered, python_only
        return left

    def _save_hs(self, directory: Path, key: str, left: list[int]) -> None:
        index = {id(p): i for i, p in enumerate(self.patterns)}
        _save_db(directory, key, self._hs_db, {"left": left, "prefiltered": [index[id(p)] for p in self.prefiltered]})

    def _compile_hyperscan(self) -> list[int]:
        assert _hs is not None
        todo: dict[int, tuple[bytes, int]] = {}  # id -> (expression, flags)
        left: list[int] = []
        suspects: list[int] = []
        for i, p in enumerate(self.patterns):
            rx = self._plain[i]
            if _PY_ONLY_SYNTAX.search(rx):
                left.append(i)
                continue
            todo[i] = (rx.encode("utf-8"), _hs.HS_FLAG_MULTILINE | (_hs.HS_FLAG_CASELESS if p.ignore_case else 0))
            if _HS_SUSPECT.search(rx):
                suspects.append(i)

        def settle(i: int) -> None:
            """Try one pattern alone: as it is, else in prefilter mode, else leave it to Python."""
            data, f = todo[i]
            for extra in (0, _hs.HS_FLAG_PREFILTER):
                try:
                    _hs.Database(mode=_hs.HS_MODE_BLOCK).compile(expressions=[data], flags=[f | extra], ids=[i])
                except _hs.error:
                    continue
                todo[i] = (data, f | extra)
                return
            del todo[i]
            left.append(i)

        for i in suspects:  # lookarounds, backreferences, ...: most need the prefilter mode
            settle(i)
        db = None
        for attempt in range(2):
            if not todo:
                break
            ids = sorted(todo)
            try:
                db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
                db.compile(expressions=[todo[i][0] for i in ids], flags=[todo[i][1] for i in ids], ids=ids)
                break
            except _hs.error:
                db = None
                if attempt == 0:  # something the quick test did not foresee: find it one by one
                    for i in ids:
                        if i not in suspects:
                            settle(i)
        self.prefiltered = [self.patterns[i] for i in sorted(todo) if todo[i][1] & _hs.HS_FLAG_PREFILTER]
        if db is None and todo:
            left.extend(todo)  # cannot happen once every pattern compiled alone; stay correct anyway
        left.sort()
        self.python_only = [self.patterns[i] for i in left]
        if db is not None:
            self._hs_db = db
            self._hs_scratch = _hs.Scratch(db)
        if left:
            log.debug("scan: %d pattern(s) left to Python re: %s", len(left), [self.patterns[i].regex for i in left])
        return left

    def _hs_candidates(self, buf: bytes, found: dict[int, set[int]], db: Any = None, scratch: Any = None) -> bool:
        """The candidate lines of `buf` (line start -> pattern ids) into `found`; True when one
        of _GLUED_HINTS matched (`db`: the database with them, else the plain one)."""
        hits: list[tuple[int, int]] = []
        add = hits.append

        def on_match(pid: int, _frm: int, to: int, _flags: int, _ctx: object) -> None:
            add((to, pid))

        (db or self._hs_db).scan(buf, match_event_handler=on_match, scratch=scratch or self._hs_scratch)
        line_start, line_end = 0, -1
        ids: set[int] = set()
        n = len(self.patterns)
        hinted = False
        for to, pid in hits:
            if pid >= n:
                hinted = True
                continue
            last = to - 1  # the match's last byte; its line is the candidate
            if not line_start <= last <= line_end:
                line_start = buf.rfind(b"\n", 0, last) + 1
                line_end = buf.find(b"\n", last)
                if line_end < 0:
                    line_end = len(buf)
                ids = found.setdefault(line_start, set())
            ids.add(pid)
        return hinted

    def _hinted(self) -> tuple[Any, Any] | None:
        """Hyperscan's patterns and _GLUED_HINTS (ids after the patterns') in one database, built
        on first use or loaded from the private cache: one pass over a chunk with progress bars
        gives its candidate lines and whether a bar may have text glued after it."""
        if self._hs_hinted is None:
            self._hs_hinted = self._build_hinted() or False
        return self._hs_hinted or None

    def _build_hinted(self) -> tuple[Any, Any] | None:
        if _hs is None or self._hs_db is None:
            return None
        prefiltered = {id(p) for p in self.prefiltered}
        left = {id(p) for p in self.python_only}
        ids = [i for i, p in enumerate(self.patterns) if id(p) not in left]
        flags = [
            _hs.HS_FLAG_MULTILINE
            | (_hs.HS_FLAG_CASELESS if self.patterns[i].ignore_case else 0)
            | (_hs.HS_FLAG_PREFILTER if id(self.patterns[i]) in prefiltered else 0)
            for i in ids
        ]
        expressions = [self._plain[i].encode("utf-8") for i in ids] + list(_GLUED_HINTS)
        flags += [_hs.HS_FLAG_SINGLEMATCH] * len(_GLUED_HINTS)
        ids += [len(self.patterns) + k for k in range(len(_GLUED_HINTS))]
        key = hashlib.sha256(repr((getattr(_hs, "__version__", ""), expressions, flags, ids)).encode()).hexdigest()[:24]
        directory = cache_dir("scan")
        loaded = _load_db(directory, key) if directory is not None else None
        if loaded is not None:
            db = loaded[0]
        else:
            try:
                db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
                db.compile(expressions=expressions, flags=flags, ids=ids)
            except _hs.error:
                return None
            if directory is not None:
                _save_db(directory, key, db, {})
        return db, _hs.Scratch(db)

    # -- owners

    def owners_of(self, line: str) -> tuple[tuple[str, ...], int]:
        """Which owners' patterns match this line, and the largest block they ask for."""
        return self._owners_among(line, self._all_ids)

    def _possible_ids(self, text: str) -> set[int] | None:
        """The patterns that may match somewhere in `text`, which may hold several lines: those
        the engine finds in its bytes (a superset: the same bytes, `^` and `$` looser); None
        where `str` and `bytes` semantics may differ (text that is not plain ASCII)."""
        if not text.isascii() or _STR_ONLY_SPACE.search(text):
            return None
        return set().union(*self._candidates(text.encode("ascii")).values())

    def possible_owners(self, text: str) -> set[str] | None:
        """The owners whose patterns may match somewhere in `text` (see _possible_ids)."""
        ids = self._possible_ids(text)
        if ids is None:
            return None
        return {self._owner_names[self._pat_owner[i]] for i in ids}

    def _owners_of_text(self, text: str) -> tuple[tuple[str, ...], int]:
        """owners_of for a text of several lines, checking only the patterns that may match."""
        ids = self._possible_ids(text)
        return self.owners_of(text) if ids is None else self._owners_among(text, ids)

    def _owners_among(self, line: str, ids: Iterable[int]) -> tuple[tuple[str, ...], int]:
        """Like owners_of, checking only the patterns `ids` (the others cannot match the line)."""
        res = self._str_res
        pat_owner = self._pat_owner
        done: set[int] = set()
        block = 0
        for i in sorted(ids):
            o = pat_owner[i]
            if o in done:
                continue  # an owner's first matching pattern (in declaration order) decides its block
            if res[i].search(line):
                done.add(o)
                block = max(block, self.patterns[i].block)
        names = self._owner_names
        return tuple(names[o] for o in sorted(done)), block

    # -- the scan

    def _candidates(self, buf: bytes) -> dict[int, set[int]]:
        found: dict[int, set[int]] = {}
        if self._hs_db is not None:
            self._hs_candidates(buf, found)
        if self._py is not None:
            self._py.candidates(buf, found)
        return found

    def _cross_line(self, buf: bytes, start: int, end: int, ids: list[int]) -> list[tuple[int, int]]:
        """Matches of the patterns `ids` (which can match a newline) that run over several lines,
        one of them the line buf[start:end]: their (first line start, last line end).

        A line matched only together with its neighbours is a hit at its first line whose text is
        all of them, as a pattern like `compile\\s+PyTorch` asks for. Only CROSS_LINES lines either
        side are looked at."""
        ws, we = start, end
        for _ in range(CROSS_LINES):
            if ws == 0 or start - ws > CROSS_BYTES:
                break
            ws = buf.rfind(b"\n", 0, ws - 1) + 1
        for _ in range(CROSS_LINES):
            if we >= len(buf) or we - end > CROSS_BYTES:
                break
            nxt = buf.find(b"\n", we + 1)
            we = len(buf) if nxt < 0 else nxt
        out = []
        for i in ids:
            rx = self._bytes_res.get(i)
            if rx is None:
                p = self.patterns[i]
                rx = self._bytes_res[i] = re.compile(self._plain[i].encode("utf-8"), re.M | (re.I if p.ignore_case else 0))
            for m in rx.finditer(buf, ws, we):
                s = buf.rfind(b"\n", 0, m.start()) + 1
                e = buf.find(b"\n", m.end())
                e = len(buf) if e < 0 else e
                if s <= start <= e and buf.find(b"\n", s, e) >= 0:
                    out.append((s, e))
        return out

    def _prepare(self, chunk: bytes) -> tuple[bytes, set[int], list[int], dict[int, set[int]]]:
        """The chunk as the scan reads it (long lines cut, the terminal view), the offsets of
        the cut lines there, the line breaks the view added, and its candidate lines."""
        buf, cut_starts = _bound_long_lines(chunk)
        breaks: list[int] = []
        if needs_view(buf):  # colour codes, progress-bar redraws: match what a terminal shows
            hinted = self._hinted() if b"\r" not in buf and b"\x1b" not in buf else None
            if hinted is not None:  # only progress bars: the view differs only where text is glued after one
                found: dict[int, set[int]] = {}
                if not self._hs_candidates(buf, found, *hinted):
                    if self._py is not None:
                        self._py.candidates(buf, found)
                    return buf, cut_starts, breaks, found
            buf, breaks, removed = terminal_view(buf)
            cut_starts = {view_offset(removed, c) for c in cut_starts}
        return buf, cut_starts, breaks, self._candidates(buf)

    def _in_runs(
        self, text: str, line_no: int, owners: tuple[str, ...], block: int, last: dict[str, int]
    ) -> tuple[tuple[str, ...], int]:
        """The hit's owners and block once continuing lines are read (`last`: each such owner's
        previous hit): a line that continues its owner's previous hit (a traceback's next frame)
        is left to that hit; its other owners keep their patterns' block."""
        dropped: set[str] = set()
        for owner in self._run_owners.intersection(owners):
            previous = last.get(owner)
            last[owner] = line_no
            if previous is not None and any(
                o == owner and line_no - previous <= near and self._str_res[i].search(text) for i, o, near in self._continuing
            ):
                dropped.add(owner)
        if not dropped:
            return owners, block
        kept = tuple(o for o in owners if o not in dropped)
        if not kept:
            return kept, 0
        ids = self._possible_ids(text)
        others = [j for j in (self._all_ids if ids is None else ids) if self.patterns[j].owner not in dropped]
        return kept, self._owners_among(text, others)[1]

    def _capped(self, owners: tuple[str, ...], per_owner: dict[str, int]) -> tuple[str, ...]:
        """The owners still under their cap (`caps`), counting this hit in `per_owner`."""
        if not per_owner:
            return owners
        kept = tuple(o for o in owners if o not in per_owner or per_owner[o] < self.caps[o])
        for o in kept:
            if o in per_owner:
                per_owner[o] += 1
        return kept

    def join(self, parts: list[ScanResult]) -> ScanResult | None:
        """The result of one scan over a file, from the results of its consecutive parts (each
        scanned with `part=True`); None when the limit of MAX_REGIONS decides what is kept (the
        file is then scanned whole)."""
        out = ScanResult()
        per_owner: dict[str, int] = dict.fromkeys(self.caps, 0)
        for part in parts:
            if part.capped_at or part.dropped:
                return None
            for hit, owners in zip(part.hits, part.uncapped, strict=True):
                owners = self._capped(owners, per_owner)  # counted over the whole file, as one scan does
                if owners:
                    if len(out.hits) >= MAX_REGIONS:
                        return None
                    out.hits.append(Hit(hit.line_no + out.lines, owners, hit.lines, hit.want))
            out.lines += part.lines
            out.bytes += part.bytes
            out.long_lines += part.long_lines
        return out

    def scan(self, chunks: Iterable[bytes], tail: Iterable[bytes] = (), part: bool = False) -> ScanResult:
        """The hits of the chunks (a file, or a part of one). `tail`: the chunks after a part, read
        only as far as its last blocks need. `part`: keep each hit's owners before the caps per
        owner (`uncapped`) for `join`, which applies them over the whole file."""
        result = ScanResult()
        last_hit: dict[str, int] = {}  # owner with continuing patterns -> the line of its last hit
        pending: list[Hit] = []
        per_owner: dict[str, int] = dict.fromkeys(self.caps, 0)
        line_base = 0  # lines before the current chunk
        owners_among: Callable[[str, Iterable[int]], tuple[tuple[str, ...], int]] = self._owners_among
        for chunk in chunks:
            result.bytes += len(chunk)
            if result.capped_at:  # bounded work after the cap: count the lines, look at nothing
                n = _newlines(chunk) + (1 if chunk and not chunk.endswith(b"\n") else 0)
                result.not_examined += n
                line_base += n
                continue
            buf, cut_starts, breaks, found = self._prepare(chunk)
            following = _Following(buf)  # the lines after hits, decoded once for every block that holds them
            if pending:
                pending = self._feed_pending(pending, following, 0)
            items: dict[int, tuple[int, str, bool, tuple[str, ...], int]] = {}  # start -> (end, text, cut, owners, block)
            for start in sorted(found):
                end = buf.find(b"\n", start)
                end = len(buf) if end < 0 else end
                raw = buf[start:end]
                text, _ = _decode(raw)
                cut = start in cut_starts
                ids: Iterable[int] = found[start]
                if cut or raw.endswith(b"\r") or not text.isascii() or _STR_ONLY_SPACE.search(text):
                    ids = self._all_ids if owners_among(text, ids)[0] else ()
                owners, block = owners_among(text, ids)
                if owners and start not in items:
                    items[start] = (end, text, cut, owners, block)
                multi = [i for i in found[start] if self._multiline[i] and not self._str_res[i].search(text)]
                if multi:
                    for s, e in self._cross_line(buf, start, end, multi):
                        rtext, rcut = _decode(buf[s:e])
                        owners, block = self._owners_of_text(rtext)
                        if owners:  # the match runs over several lines: one hit, at its first line, as one text
                            items[s] = (e, rtext, rcut, owners, block)
            seen_pos, seen_lines = 0, line_base
            for start in sorted(items):
                end, text, cut, owners, block = items[start]
                result.long_lines += cut
                seen_lines += buf.count(b"\n", seen_pos, start)
                if breaks:
                    seen_lines -= added_before(breaks, start) - added_before(breaks, seen_pos)
                seen_pos = start
                line_no = seen_lines + 1
                if self._run_owners:
                    owners, block = self._in_runs(text, line_no, owners, block, last_hit)
                    if not owners:
                        continue
                uncapped = owners
                owners = self._capped(owners, per_owner)
                if owners:
                    if len(result.hits) < MAX_REGIONS:
                        hit = Hit(line_no, owners, [text], block)
                        result.hits.append(hit)
                        if part:
                            result.uncapped.append(uncapped)
                        if block:
                            pending.extend(self._feed_pending([hit], following, end + 1))
                    else:
                        result.dropped += 1
                        result.capped_at = result.capped_at or line_no
            line_base += _newlines(chunk)
            if chunk and not chunk.endswith(b"\n"):
                line_base += 1
        result.lines = line_base
        if pending and not result.capped_at:  # blocks that go on into the next part
            for chunk in tail:
                pending = self._feed_pending(pending, _Following(self._prepare(chunk)[0]), 0)
                if not pending:
                    break
        return result

    @staticmethod
    def _feed_pending(pending: list[Hit], lines: _Following, pos: int) -> list[Hit]:
        """Give the following lines of a buffer (from `pos`, a line start) to hits still capturing."""
        still: list[Hit] = []
        for hit in pending:
            got = lines.take(pos, hit.want)
            hit.lines.extend(got)
            hit.want -= len(got)
            if hit.want > 0:
                still.append(hit)
        return still
