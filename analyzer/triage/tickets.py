"""`--tickets DIR`: one Markdown file per failure group (named by its fingerprint) and the HTML
report of the group's first job to attach."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analyzer.report.fleet import ticket_markdown

NO_TICKET = {"none"}  # a finished job is no failure to file


def write_tickets(result: dict[str, Any], directory: Path) -> list[Path]:
    """Write the tickets; sets each job's `report` to the HTML report written for it."""
    from analyzer.pipeline import analyze
    from analyzer.report import render

    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    by_job = {j["job"]: j for j in result["jobs"]}
    for g in result["groups"]:
        if g["category"] in NO_TICKET:
            continue
        lead = g["jobs"][0]
        html_path = directory / f"{g['fingerprint']}.html"
        html_path.write_text(render(analyze(Path(lead)), "html"), encoding="utf-8")
        by_job[lead]["report"] = str(html_path)
        md_path = directory / f"{g['fingerprint']}.md"
        md_path.write_text(ticket_markdown(g, result["nodes"], html_path.name), encoding="utf-8")
        written += [md_path, html_path]
    return written
