"""Output safety per format: what a log line or a file name holds cannot drive the reader's
terminal, add markup to a ticket, break HTML, or make the JSON invalid UTF-8.

The run dir is the bundled OOM example's real first line with hostile text appended (escape
sequences, Markdown image and link, HTML, rich markup, an emoji code), in a file whose name holds
a newline, an ESC sequence, a table row and a byte that is not UTF-8.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.report import safe

from ..conftest import REPO

HOSTILE = (
    " \x1b]0;pwned-title\x07\x1b[2J\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\\x1bP+q\x1b\\\x9b31m\x90dcs\x9c"
    " ![img](http://evil.example/x.png) [link](http://evil.example/y) <details><script>alert(1)</script>"
    " [bold red]MARKUP[/bold red] :smile: | cell\x07\x08\x7f"
)
NAME = b"rank2\n| fake | row |\x1b[2J\xff.log"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    first = (REPO / "examples" / "oom-cascade" / "train.log").read_text().splitlines()[0][:160]
    with open(os.path.join(os.fsencode(root), NAME), "wb") as f:
        f.write((first + HOSTILE + "\n").encode("utf-8"))
    return root


def analyze(run_dir: Path, fmt: str) -> bytes:
    result = CliRunner().invoke(main, ["analyze", str(run_dir), "--format", fmt, "--width", "100"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout_bytes


CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_the_hostile_line_is_the_root_cause(run_dir: Path) -> None:
    data = json.loads(analyze(run_dir, "json"))
    assert data["verdict"]["category"] == "oom_cascade"
    assert "evil.example" in json.dumps(data)  # the text is there; the formats below must defuse it


def test_terminal_has_no_control_or_escape_sequence(run_dir: Path) -> None:
    out = analyze(run_dir, "text").decode("utf-8")
    assert not CONTROLS.search(out), repr(CONTROLS.findall(out)[:5])
    assert "pwned-title" not in out  # an OSC string is removed with its content
    assert "[bold red]MARKUP[/bold red]" in out and ":smile:" in out  # rich markup and emoji codes shown as written
    assert "rank2\\n| fake | row |\\x1b[2J\\xff.log" in out  # the name, escaped


def test_markdown_keeps_log_text_in_code(run_dir: Path) -> None:
    out = analyze(run_dir, "markdown").decode("utf-8")
    assert not CONTROLS.search(out)
    unfenced = re.sub(r"(?ms)^(`{3,})text\n.*?\n\1$", "", out)
    assert unfenced != out  # the decisive line is in a fenced block
    for line in unfenced.splitlines():
        # outside code spans and blocks, nothing from the log may be live markup
        prose = re.sub(r"(`+).*?\1", "", line)
        assert "![" not in prose and "](" not in prose, line
        assert "<script" not in prose and "<details><script" not in prose, line
        assert "http://" not in prose, line
    # the file name's newline is shown, not obeyed: no table row starts with the name's tail
    assert not any(line.startswith("| fake") for line in out.splitlines())
    assert "\\n| fake" in out or "\\n\\| fake" in out
    # every table row keeps its column count (pipes inside cells are escaped)
    for line in out.splitlines():
        if line.startswith("| root_cause") or line.startswith("| symptom"):
            assert len(re.findall(r"(?<!\\)\|", line)) == 5, line


def test_html_is_escaped(run_dir: Path) -> None:
    out = analyzer_html = analyze(run_dir, "html").decode("utf-8")
    assert "<script>alert" not in analyzer_html and "<details><script" not in out
    assert "&lt;script&gt;" in out
    assert not CONTROLS.search(out)


def test_json_is_valid_utf8_with_the_undecodable_name_escaped(run_dir: Path, tmp_path: Path) -> None:
    raw = analyze(run_dir, "json")
    text = raw.decode("utf-8")  # strict: raises on invalid UTF-8
    data = json.loads(text)
    files = [s["file"] for s in data["sources"]]
    assert files == ["rank2\n| fake | row |\x1b[2J\\xff.log"]
    out = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["analyze", str(run_dir), "--format", "json", "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0
    assert json.loads(out.read_bytes().decode("utf-8"))["sources"][0]["file"] == files[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\x1b[31mred\x1b[0m b", "ared b"),
        ("t\x1b]0;title\x07x", "tx"),
        ("t\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\x", "tlinkx"),
        ("d\x1bP1$r\x1b\\e", "de"),
        ("c1\x9b2Jz", "c1z"),
        ("tab\there", "tab here"),
        ("keep [b]x[/b] :smile:", "keep [b]x[/b] :smile:"),
        ("cut \x1b]0;never ends", "cut "),
    ],
)
def test_strip_sequences(text: str, expected: str) -> None:
    assert safe.strip_sequences(text) == expected


def test_md_code_holds_backticks() -> None:
    assert safe.md_code("a ``b`` c") == "```a ``b`` c```"
    assert safe.md_code("`x`") == "`` `x` ``"


def test_md_text_defuses_links_and_html() -> None:
    out = safe.md_text("see ![i](http://e.x/i.png) <b>x</b> www.e.x")
    assert "`http://e.x/i.png)`" in out and "\\<b\\>" in out and "`www.e.x`" in out
