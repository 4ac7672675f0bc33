"""The CLI end to end on the bundled examples, every format, and bad input."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.paths import report_schema_path

from .conftest import REPO

EXAMPLES = sorted(p for p in (REPO / "examples").iterdir() if p.is_dir())


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        h.update(f"{p.relative_to(root)}:{st.st_mode}:{st.st_size}:{st.st_mtime_ns}".encode())
        if p.is_file() and not p.is_symlink():
            h.update(p.read_bytes())
    return h.hexdigest()


def test_three_bundled_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_json_follows_the_schema_and_names_the_cause(example: Path) -> None:
    before = tree_digest(example)
    code, out, _ = run("analyze", str(example), "--format", "json")
    assert code == 0
    data = json.loads(out)
    jsonschema.validate(data, json.loads(report_schema_path().read_text()))
    import yaml

    label = yaml.safe_load((example / "case.yaml").read_text())
    assert data["verdict"]["category"] == label["category"]
    assert data["verdict"]["first_failure"]["file"]
    assert tree_digest(example) == before  # nothing written inside the run dir


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_human_formats(fmt: str) -> None:
    code, out, _ = run("analyze", str(REPO / "examples" / "oom-cascade"), "--format", fmt)
    assert code == 0
    assert "oom_cascade" in out
    if fmt == "markdown":
        assert out.startswith("## postmortem: `oom_cascade`")
        assert "| role | where | who | line |" in out


def test_output_file_and_refusal_inside_run_dir(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code, _, _ = run("analyze", str(REPO / "examples" / "oom-cascade"), "--format", "json", "-o", str(out))
    assert code == 0 and json.loads(out.read_text())["schema_version"] == 1
    result = CliRunner().invoke(
        main, ["analyze", str(REPO / "examples" / "oom-cascade"), "-o", str(REPO / "examples" / "oom-cascade" / "x.json")]
    )
    assert result.exit_code == 2 and "never writes inside the run dir" in result.output


def test_missing_dir_is_a_clear_message(tmp_path: Path) -> None:
    code, out, err = run("analyze", str(tmp_path / "nope"))
    assert code == 2 and "no such directory" in err and "Traceback" not in err + out


def test_empty_dir_exits_2_with_one_sentence(tmp_path: Path) -> None:
    code, out, err = run("analyze", str(tmp_path), "--format", "json")
    assert code == 2 and out == ""
    assert err.strip().endswith("no files in this directory; give the directory the job wrote its logs to")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bad_input_gives_notes_and_the_analysis_goes_on(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "binary.bin").write_bytes(bytes(range(256)) * 100)
    (run_dir / "latin1.log").write_bytes(
        "caf\xe9 \xff\xfe\n".encode("latin-1") + b"RuntimeError: DataLoader worker (pid 9) is killed by signal: Bus error.\n"
    )
    (run_dir / "oneline.log").write_bytes(b"z" * (50 << 20))
    good = gzip.compress(b"line\n" * 10000)
    (run_dir / "trunc.log.gz").write_bytes(good[: len(good) // 2])
    (run_dir / "empty.log").write_bytes(b"")
    unreadable = run_dir / "unreadable.log"
    unreadable.write_text("x\n")
    unreadable.chmod(0)
    before = tree_digest(run_dir)
    code, out, err = run("analyze", str(run_dir), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    sources = {s["file"]: s for s in data["sources"]}
    assert sources["binary.bin"]["status"] == "skipped"
    # what was read before the cut is kept, and the cut is noted
    assert sources["trunc.log.gz"]["status"] == "parsed" and "truncated" in sources["trunc.log.gz"]["note"]
    assert sources["empty.log"]["status"] == "skipped"
    assert sources["oneline.log"]["status"] == "parsed"
    if os.geteuid() != 0:  # root reads everything
        assert sources["unreadable.log"]["status"] == "error"
    assert data["verdict"]["category"] == "shm"  # the good line in the invalid UTF-8 file still counts
    assert tree_digest(run_dir) == before


def test_parse_python_traceback_json(external: Path) -> None:
    code, out, _ = run("parse", "python_traceback", str(external / "satyr/python_stacktraces/python-01"))
    data = json.loads(out)
    assert code == 0
    (tb,) = data["tracebacks"]
    assert tb["exception"] == {"type": "AttributeError", "message": "'NoneType' object has no attribute 'rsplit'"}
    assert len(tb["frames"]) == 11 and set(tb["frames"][0]) >= {"file", "line", "function"}
    code, out_auto, _ = run("parse", "auto", str(external / "satyr/python_stacktraces/python-01"))
    assert json.loads(out_auto)["tracebacks"][0]["exception"]["type"] == "AttributeError"


def test_signatures_commands() -> None:
    code, out, _ = run("signatures", "list", "--format", "json")
    sigs = json.loads(out)
    assert code == 0 and sigs
    assert all(s["source"] and s["source"][0]["project"] and s["source"][0]["versions"] for s in sigs)
    code, out, _ = run("signatures", "show", sigs[0]["id"])
    assert code == 0 and f"id: {sigs[0]['id']}" in out
    code, _, err = run("signatures", "show", "no.such.signature")
    assert code == 2 and "no signature" in err
    code, out, err = run("signatures", "check")
    assert code == 0, out
    assert "0 problem(s)" in err


def test_signatures_coverage_cli() -> None:
    code, out, _ = run("signatures", "coverage", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["problems"] == []
    assert data["emitters"]["nccl"]["counts"]["missed"] == 0 and data["totals"]["wrong"] == 0
    assert {r["status"] for r in data["results"] if r["category"] == "none"} == {"benign"}
    code, out, _ = run("signatures", "coverage", "--summary")
    assert code == 0 and out.splitlines()[-1].startswith("total: ") and "    covered" not in out


def test_signatures_check_reports_every_problem_with_file(tmp_path: Path) -> None:
    """Every validator runs on every file: one bad file shows all of its issues, each with its
    type and line, next to the other files' issues and the Xid table's."""
    root = tmp_path / "sigs"
    (root / "shm").mkdir(parents=True)
    (root / "taxonomy.yaml").write_text((REPO / "signatures" / "taxonomy.yaml").read_text())
    (root / "shm" / "bad.one.yaml").write_text(
        "id: bad.two\ntitle: t\ncategory: shm\nsubcategory: shm.nope\nrole: root_cause\n"
        "confidence: 2\ndetection:\n  sel:\n    message|re: '('\n  condition: sel\n"
        "summary: s\ntests:\n  match: ['x']\n  no_match: []\n"
    )
    (root / "shm" / "broken.yaml").write_text("id: [unclosed\n")
    (root / "xid.yaml").write_text(
        "xids:\n  79: {name: X, meaning: m, cause_class: cosmic, category: hardware_xid, confidence: 3, action: a}\n"
    )
    code, out, _ = run("signatures", "check", "--dir", str(root))
    assert code == 1
    lines = out.splitlines()
    assert "sigs/shm/bad.one.yaml:1: identity: id 'bad.two' differs from the file name 'bad.one'" in lines
    assert "sigs/shm/bad.one.yaml:1: schema: (file): 'source' is a required property" in lines
    assert "sigs/shm/bad.one.yaml:4: taxonomy: subcategory 'shm.nope' is not listed under 'shm' in taxonomy.yaml" in lines
    assert "sigs/shm/bad.one.yaml:6: schema: confidence: 2 is greater than the maximum of 1" in lines
    assert any(line.startswith("sigs/shm/bad.one.yaml:9: regex: selection 'sel': regex '(' does not compile") for line in lines)
    assert any(line.startswith("sigs/shm/broken.yaml:2: yaml: invalid YAML") for line in lines)
    assert "sigs/xid.yaml:2: xid: xid 79: confidence must be a number in (0, 1]" in lines
    assert any(line.startswith("sigs/xid.yaml:2: xid: xid 79: cause_class 'cosmic'") for line in lines)


def test_eval_json(tmp_path: Path) -> None:
    code, out, _ = run("eval", str(REPO / "examples"), "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["cases"] == len(EXAMPLES)
    assert set(data) >= {"accuracy", "per_category", "confusion", "first_failure_rank_accuracy"}


def test_parse_auto_recognises_a_bt_full_file(external: Path) -> None:
    code, out, _ = run("parse", "auto", str(external / "satyr/gdb_stacktraces/rhbz-803600"))
    data = json.loads(out)
    assert code == 0 and len(data["threads"]) == 2 and data["crash_thread"] == 1


def test_eval_without_scikit_learn_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "sklearn", None)  # `import sklearn` raises ImportError
    result = CliRunner().invoke(main, ["eval", str(REPO / "examples")])
    assert result.exit_code == 2
    assert "pip install 'postmortem[ml]'" in result.output and "--no-cv" in result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, ImportError)
    trained = CliRunner().invoke(main, ["train", str(REPO / "examples"), "-o", "/dev/null"])
    assert trained.exit_code == 2 and "postmortem[ml]" in trained.output


def test_a_tree_of_empty_directories_exits_2(tmp_path: Path) -> None:
    (tmp_path / "node0" / "logs").mkdir(parents=True)
    code, out, err = run("analyze", str(tmp_path))
    assert code == 2 and out == "" and "no files in this directory" in err
