"""Golden outputs: what every parser makes of its reference inputs, and every report format of
the bundled examples, kept as files under tests/golden/ and reviewed in diffs.

`python -m tests.golden --update` regenerates them all, and writes the categories of
signatures/taxonomy.yaml into the report schema's enums and the model's `Category` (so adding a
category is the taxonomy, its signatures and cases, and this command); tests/test_golden.py
compares. Inputs are repository files
only (fixtures with their provenance, corpus cases, examples).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent

# (parser name for `postmortem parse`, input file relative to the repository): every fixture
# under tests/fixtures/parse/<stem>/ (its .source files are provenance notes), and these
OTHER_PARSE_INPUTS: tuple[tuple[str, str], ...] = (
    ("python_traceback", "tests/fixtures/external/satyr/python_stacktraces/python-01"),
    ("python_traceback", "tests/fixtures/external/satyr/python_stacktraces/python-03"),
    ("python_traceback", "examples/shm-bus-error/train.log"),
    ("faulthandler", "corpora/lab/lab-storage-004/console.log"),
    ("faulthandler", "corpora/lab/lab-hang-002/console.log"),
    ("torchelastic", "examples/oom-cascade/train.log"),
    ("torchelastic", "corpora/lab/lab-hang-003/logs/job_f30qgj6r/attempt_0/0/error.json"),
    ("dmesg", "examples/xid-fallen-off-bus/dmesg.log"),
    ("dmesg", "tests/fixtures/external/satyr/kerneloopses/rhbz-827868"),
    ("gdb_backtrace", "tests/fixtures/external/satyr/gdb_stacktraces/rhbz-803600"),
    ("gdb_backtrace", "tests/fixtures/external/satyr/gdb_stacktraces/no-thread-header"),
    ("cuda_p2p", "corpora/real/real-ho-008/train.log"),
    ("cuda_p2p", "corpora/real/real-bl-020/train.log"),
    ("cuda_p2p", "corpora/real/real-ng-005/p2p_test.log"),
)


def _fixture_inputs() -> list[tuple[str, str]]:
    base = REPO / "tests" / "fixtures" / "parse"
    return [
        (p.parent.name, p.relative_to(REPO).as_posix()) for p in sorted(base.glob("*/*")) if p.is_file() and p.suffix != ".source"
    ]


PARSE_INPUTS: tuple[tuple[str, str], ...] = (*_fixture_inputs(), *OTHER_PARSE_INPUTS)

REPORT_FORMATS = {"text": "txt", "json": "json", "markdown": "md", "html": "html"}


def examples() -> list[str]:
    return sorted(p.name for p in (REPO / "examples").iterdir() if (p / "case.yaml").is_file())


def parse_golden(parser: str, rel: str) -> tuple[Path, Callable[[], str]]:
    def make() -> str:
        from analyzer.parse.dump import dump_file

        data = dump_file(parser, REPO / rel)
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"

    name = rel.replace("/", "__")
    return GOLDEN / "parse" / parser / f"{name}.json", make


def report_golden(example: str, fmt: str) -> tuple[Path, Callable[[], str]]:
    def make() -> str:
        import os

        from analyzer.pipeline import analyze
        from analyzer.report import render

        cwd = os.getcwd()
        os.chdir(REPO)  # the report names the run dir as given: a path relative to the repository
        try:
            # the terminal report takes the terminal's width: golden text is at a fixed 100 columns
            return render(analyze(Path("examples") / example), fmt, color=False, width=100 if fmt == "text" else None)
        finally:
            os.chdir(cwd)

    return GOLDEN / "report" / f"{example}.{REPORT_FORMATS[fmt]}", make


def cases() -> list[tuple[str, Path, Callable[[], str]]]:
    out = [(f"parse/{p}/{rel}", *parse_golden(p, rel)) for p, rel in PARSE_INPUTS]
    out += [(f"report/{ex}/{fmt}", *report_golden(ex, fmt)) for ex in examples() for fmt in REPORT_FORMATS]
    return out


def schema_with_taxonomy_enums() -> str:
    """The report schema's text with every `category` enum set to the taxonomy's categories."""
    from analyzer.paths import report_schema_path
    from analyzer.signatures.taxonomy import categories

    schema = json.loads(report_schema_path().read_text(encoding="utf-8"))

    def fix(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "category" and isinstance(v, dict) and "enum" in v:
                    v["enum"] = list(categories())
                fix(v)
        elif isinstance(node, list):
            for v in node:
                fix(v)

    fix(schema)
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def model_with_taxonomy_categories() -> str:
    """analyzer/model/__init__.py with the members of `Category` written from the taxonomy."""
    import re

    from analyzer.signatures.taxonomy import categories

    path = REPO / "analyzer" / "model" / "__init__.py"
    text = path.read_text(encoding="utf-8")
    members = "".join(f'    {c.upper()} = "{c}"\n' for c in categories())
    out, n = re.subn(
        r"(    # BEGIN taxonomy categories\n).*?(    # END taxonomy categories\n)",
        lambda m: m.group(1) + members + m.group(2),
        text,
        count=1,
        flags=re.S,
    )
    if n != 1:
        raise ValueError(f"{path}: the `# BEGIN/END taxonomy categories` markers of Category are missing")
    return out
