"""Log-template mining for jobs the analyzer could not explain (`unknown`): their failing lines,
with hosts and numbers masked, go through Drain3; jobs whose first failing lines share templates
are one group, so a new kind of failure shows up as one group with its template."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

SIM_THRESHOLD = 0.5
LINES_PER_JOB = 3
NO_LINE = "(no failing line in the logs)"

_MASKS = (
    ("UUID", r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
    ("IP", r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"),
    ("PCI", r"\b(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b"),
    ("HEX", r"\b0x[0-9a-fA-F]+\b"),
    ("PATH", r"(?<![\w.])(?:/[\w.@+~-]+){2,}"),
    ("TIME", r"\b\d{1,4}[-/:]\d{1,2}[-/:]\d{1,4}(?:[T _]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?)?\b"),
    ("NUM", r"(?<![A-Za-z])[-+]?\d+(?:\.\d+)?(?![A-Za-z])"),
)


def _premask(line: str, hosts: Iterable[str]) -> str:
    for host in sorted({h for h in hosts if h and len(h) > 1}, key=len, reverse=True):
        line = re.sub(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", "<HOST>", line)
    return line


def mine(jobs: Sequence[tuple[str, Sequence[str], Sequence[str]]]) -> dict[str, list[str]]:
    """(job, failing lines, hosts) of each unknown job -> that job's templates (first lines first).
    Deterministic: jobs are fed in name order."""
    from drain3 import TemplateMiner
    from drain3.masking import MaskingInstruction
    from drain3.template_miner_config import TemplateMinerConfig

    config = TemplateMinerConfig()  # built here, never read from a drain3.ini in the working dir
    config.drain_sim_th = SIM_THRESHOLD
    config.masking_instructions = [MaskingInstruction(rx, name) for name, rx in _MASKS]
    config.parametrize_numeric_tokens = True
    miner = TemplateMiner(config=config)
    prepared: dict[str, list[str]] = {}
    for job, lines, hosts in sorted(jobs, key=lambda j: j[0]):
        chosen = [_premask(line, hosts) for line in list(dict.fromkeys(lines))[:LINES_PER_JOB]]
        prepared[job] = chosen
        for line in chosen:
            miner.add_log_message(line)
    out: dict[str, list[str]] = {}
    for job, chosen in prepared.items():
        templates = []
        for line in chosen:
            cluster = miner.match(line, full_search_strategy="fallback")
            templates.append(cluster.get_template() if cluster is not None else miner.drain.get_content_as_tokens(line))
        out[job] = [t if isinstance(t, str) else " ".join(t) for t in templates] or [NO_LINE]
    return out


def template_fingerprint(subcategory: str | None, templates: Sequence[str]) -> str:
    raw = "\x1f".join(["unknown", subcategory or "", *templates])
    return hashlib.sha1(raw.encode("utf-8")).hexdigest()[:16]
