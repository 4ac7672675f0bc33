"""Which of the messages that the emitters can print the signature database recognises.

`signatures/emitters/<emitter>.yaml` lists, per emitter (NCCL, PyTorch, the CUDA runtime, the
NVIDIA kernel driver, the Linux kernel, Slurm, ...), the messages read from its source: what the
source file prints, at which versions, what the message means as a job's first failure
(`category`, and `role` when it is only a symptom or context), and the lines as the emitter
writes them. Coverage runs every line through the real scan, parsers and matcher and says, per
emitter and category, which messages the signatures name correctly.

Statuses:
- `covered`: every line of the message gets a finding of the expected category and role
  (root cause for a cause; any role for a symptom or context line);
- `wrong`: a line gets a root cause of another category (or any root cause for a benign line or
  a symptom);
- `missed`: some line gets no finding of the expected category;
- `benign`: a line healthy jobs print (category `none`) that names no root cause, as it should;
- `recognised` / `unrecognised`: a failure whose message alone cannot name a category
  (category `unknown`): some finding / no finding at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from analyzer.events.ingest import build_scanner, events_from_text
from analyzer.model import Finding, Role
from analyzer.paths import signatures_dir
from analyzer.signatures.loader import Problem, Signature, line_patterns, load_all
from analyzer.signatures.matcher import find
from analyzer.signatures.xid import xid_findings

EMITTERS_DIR = "emitters"
STATUSES = ("covered", "wrong", "missed", "benign", "recognised", "unrecognised")
ROLES = ("root_cause", "symptom", "context")


@dataclass(frozen=True, slots=True)
class Message:
    emitter: str
    id: str
    file: str
    versions: tuple[str, ...]
    category: str  # a taxonomy category, `none` (benign) or `unknown` (undecidable from the text)
    role: str
    lines: tuple[str, ...]
    where: str  # catalog file:line


@dataclass(slots=True)
class Result:
    message: Message
    status: str
    signatures: list[str] = field(default_factory=list)  # the ids that fired, all lines together
    note: str = ""


def catalog_files(root: Path | None = None) -> list[Path]:
    return sorted(((root or signatures_dir()) / EMITTERS_DIR).glob("*.yaml"))


def load_catalog(path: Path, rel: str, categories: Iterable[str], problems: list[Problem]) -> list[Message]:
    """The messages of one emitter's catalog; malformed entries become problems."""
    allowed = set(categories) | {"none", "unknown"}
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        problems.append(Problem(rel, None, f"cannot read the catalog: {' '.join(str(exc).split())}", "catalog"))
        return []
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list) or not data.get("emitter"):
        problems.append(Problem(rel, 1, "a catalog needs `emitter` and a `messages` list", "catalog"))
        return []
    items = node.value if isinstance(node, yaml.MappingNode) else []
    msg_nodes: list[yaml.Node] = next((v.value for k, v in items if k.value == "messages"), [])
    out: list[Message] = []
    seen: set[str] = set()
    for i, raw in enumerate(data["messages"]):
        line = msg_nodes[i].start_mark.line + 1 if i < len(msg_nodes) else None
        if not isinstance(raw, dict) or not raw.get("id") or not raw.get("lines"):
            problems.append(Problem(rel, line, "a message needs an `id` and `lines`", "catalog"))
            continue
        mid = str(raw["id"])
        cat = str(raw.get("category", ""))
        role = str(raw.get("role", "root_cause"))
        if mid in seen:
            problems.append(Problem(rel, line, f"message {mid!r} is listed twice", "catalog"))
        seen.add(mid)
        if cat not in allowed:
            problems.append(
                Problem(rel, line, f"message {mid!r}: category {cat!r} is not a category, `none` or `unknown`", "catalog")
            )
            continue
        if role not in ROLES:
            problems.append(Problem(rel, line, f"message {mid!r}: role {role!r} is not one of {list(ROLES)}", "catalog"))
            continue
        lines = raw["lines"] if isinstance(raw["lines"], list) else [raw["lines"]]
        versions = raw.get("versions") or []
        out.append(
            Message(
                emitter=str(data["emitter"]),
                id=mid,
                file=str(raw.get("file", "")),
                versions=tuple(str(v) for v in (versions if isinstance(versions, list) else [versions])),
                category=cat,
                role=role,
                lines=tuple(str(x) for x in lines),
                where=f"{rel}:{line}" if line else rel,
            )
        )
    return out


def _status(msg: Message, per_line: list[list[Finding]]) -> tuple[str, str]:
    found = [f for fs in per_line for f in fs]
    roots = [f for f in found if f.role is Role.ROOT_CAUSE]
    if msg.category == "none":
        if roots:
            return "wrong", f"a healthy line names a root cause: {roots[0].signature}"
        return "benign", ""
    if msg.category == "unknown":
        return ("recognised", "") if all(per_line) else ("unrecognised", "")
    if msg.role == "root_cause":
        if any(f.category.value != msg.category for f in roots) and not any(f.category.value == msg.category for f in roots):
            other = next(f for f in roots if f.category.value != msg.category)
            return "wrong", f"named {other.category.value} ({other.signature})"
        for i, fs in enumerate(per_line):
            if not any(f.role is Role.ROOT_CAUSE and f.category.value == msg.category for f in fs):
                return "missed", f"line {i + 1} gets no {msg.category} root cause"
        return "covered", ""
    if roots:
        return "wrong", f"a {msg.role} line names a root cause: {roots[0].signature}"
    for i, fs in enumerate(per_line):
        if not any(f.category.value == msg.category for f in fs):
            return "missed", f"line {i + 1} gets no {msg.category} finding"
    return "covered", ""


def load_messages(base: Path) -> tuple[list[Signature], list[Message], list[Problem]]:
    """The signatures under `base` and every message of its emitter catalogs, with the problems
    found reading them."""
    sigs, problems = load_all(base, validate=False)
    from analyzer.signatures.loader import load_taxonomy

    categories = set(load_taxonomy(base))
    messages: list[Message] = []
    for path in catalog_files(base):
        rel = path.relative_to(base.parent).as_posix()
        messages.extend(load_catalog(path, rel, categories, problems))
    return sigs, messages, problems


def measure(root: Path | None = None) -> tuple[list[Result], list[Problem]]:
    """Every catalog message under `root` (the shipped database by default) with its status."""
    base = root or signatures_dir()
    sigs, messages, problems = load_messages(base)
    xid_table = base / "xid.yaml" if (base / "xid.yaml").is_file() else None
    return [evaluate(m, sigs, xid_table) for m in messages], problems


def evaluate(msg: Message, sigs: list[Signature], xid_table: Path | None = None) -> Result:
    scanner = build_scanner(line_patterns(sigs))
    per_line = []
    for text in msg.lines:
        events = events_from_text(text, scanner)
        per_line.append(find(sigs, events) + xid_findings(events, xid_table))
    status, note = _status(msg, per_line)
    ids = sorted({f.signature for fs in per_line for f in fs})
    return Result(msg, status, ids, note)


def summary(results: list[Result]) -> dict[str, Any]:
    """Counts per emitter and per (emitter, category), and the decidable coverage ratio."""
    per_emitter: dict[str, Counter[str]] = {}
    per_category: dict[str, dict[str, Counter[str]]] = {}
    for r in results:
        e = r.message.emitter
        per_emitter.setdefault(e, Counter())[r.status] += 1
        per_category.setdefault(e, {}).setdefault(r.message.category, Counter())[r.status] += 1

    def ratio(c: Counter[str]) -> float | None:
        decidable = c["covered"] + c["wrong"] + c["missed"]
        return round(c["covered"] / decidable, 3) if decidable else None

    total: Counter[str] = Counter(r.status for r in results)
    return {
        "messages": len(results),
        "totals": {s: total[s] for s in STATUSES},
        "coverage": ratio(total),
        "emitters": {
            e: {
                "messages": sum(c.values()),
                "counts": {s: c[s] for s in STATUSES},
                "coverage": ratio(c),
                "categories": {
                    cat: {"messages": sum(cc.values()), "counts": {s: cc[s] for s in STATUSES if cc[s]}}
                    for cat, cc in sorted(per_category[e].items())
                },
            }
            for e, c in sorted(per_emitter.items())
        },
    }


def message_fields(m: Message) -> dict[str, Any]:
    """A catalog message as the JSON of `signatures coverage` and `signatures verdicts` shows it."""
    return {
        "emitter": m.emitter,
        "id": m.id,
        "category": m.category,
        "role": m.role,
        "file": m.file,
        "versions": list(m.versions),
        "catalog": m.where,
    }


def as_json(results: list[Result], problems: list[Problem]) -> dict[str, Any]:
    return {
        **summary(results),
        "problems": [str(p) for p in problems],
        "results": [
            {**message_fields(r.message), "status": r.status, "signatures": r.signatures, "note": r.note} for r in results
        ],
    }


def _counts(c: dict[str, int], of: str) -> str:
    """`(3 covered, 0 wrong, 0 missed; 1 benign; 2/5 undecidable recognised)` (`of`: "/" or " of ")."""
    return (
        f"({c['covered']} covered, {c['wrong']} wrong, {c['missed']} missed; {c['benign']} benign; "
        f"{c['recognised']}{of}{c['recognised'] + c['unrecognised']} undecidable recognised)"
    )


def as_text(results: list[Result], problems: list[Problem], verbose: bool = True) -> str:
    s = summary(results)
    out = []
    for emitter, data in s["emitters"].items():
        c = data["counts"]
        cov = "n/a" if data["coverage"] is None else f"{data['coverage'] * 100:.0f}%"
        out.append(f"{emitter}: {data['messages']} messages, coverage {cov} {_counts(c, '/')}")
        for cat, cd in data["categories"].items():
            counts = ", ".join(f"{n} {st}" for st, n in cd["counts"].items())
            out.append(f"  {cat}: {cd['messages']} ({counts})")
            if verbose:
                for r in results:
                    if r.message.emitter == emitter and r.message.category == cat:
                        sigs = ", ".join(r.signatures) or "-"
                        note = f"  [{r.note}]" if r.note else ""
                        out.append(f"    {r.status:<12} {r.message.id}: {sigs}{note}")
    t = s["totals"]
    cov = "n/a" if s["coverage"] is None else f"{s['coverage'] * 100:.1f}%"
    out.append(f"total: {s['messages']} messages, coverage {cov} {_counts(t, ' of ')}")
    out.extend(str(p) for p in problems)
    return "\n".join(out)
