"""What every command shares: writing a result where the user said, never inside a run dir."""

from __future__ import annotations

from pathlib import Path

import click


def write(text: str, output: Path | None) -> None:
    if output is None:
        click.echo(text, nl=False)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    click.echo(f"wrote {output}", err=True)


def refuse_inside(run_dir: Path, output: Path | None) -> None:
    if output is None:
        return
    try:
        output.resolve().relative_to(run_dir.resolve())
    except ValueError:
        return
    raise click.UsageError(f"-o {output}: postmortem never writes inside the run dir; choose another place")
