"""Command-line wiring of the fleet commands: triage, history, ticket push (many run dirs at once)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from analyzer.cli.common import refuse_inside as _refuse_inside
from analyzer.cli.common import write as _write

# ---- triage, history, ticket: many run dirs at once ----

TRIAGE_FORMATS = ("table", "json", "csv", "parquet", "markdown", "html")
HISTORY_FORMATS = ("table", "json", "csv", "markdown")


def _need(*modules: str, extra: str = "triage") -> None:
    """A clear message when an optional dependency of this command is missing."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        click.echo(f"postmortem: this needs {', '.join(missing)}: pip install 'postmortem[{extra}]'", err=True)
        sys.exit(2)


def _open_store(db: str | None, no_db: bool):  # type: ignore[no-untyped-def]
    if no_db:
        return None
    from analyzer.triage.store import Store, StoreError

    try:
        return Store(db)
    except StoreError as exc:
        click.echo(f"postmortem: {exc}", err=True)
        sys.exit(2)


def _cutoff(since: str | None):  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    from analyzer.triage.run import since_cutoff

    try:
        return since_cutoff(since, datetime.now(UTC))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc


@click.command()
@click.argument("run_dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--from-file", type=click.File("r"), help="Read more run dirs from this file, one a line ('-' for stdin).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Worker processes (default: the cores).")
@click.option("--scheduler", help="Run on a Dask distributed cluster at this address (tcp://HOST:PORT).")
@click.option("--db", help="History database URL (default: $POSTMORTEM_DB, else a SQLite file in the user's data dir).")
@click.option("--no-db", is_flag=True, help="Keep no history (every job analyzed, nothing stored).")
@click.option("--format", "fmt", type=click.Choice(TRIAGE_FORMATS), default="table", show_default=True)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write the result to this file.")
@click.option(
    "--tickets",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write one ticket (Markdown + HTML report) per group here.",
)
@click.option("--since", default="7d", show_default=True, help="A group is new when first seen within this (m, h, d, w).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
def triage(
    run_dirs: tuple[Path, ...],
    from_file,  # type: ignore[no-untyped-def]
    jobs: int | None,
    scheduler: str | None,
    db: str | None,
    no_db: bool,
    fmt: str,
    output: Path | None,
    tickets: Path | None,
    since: str,
    progress: bool | None,
) -> None:
    """Analyze many run dirs at once; group them by failure, with recurring nodes and history."""
    _need("pandas", "sqlalchemy", "alembic", "drain3", *(("pyarrow",) if fmt == "parquet" else ()))
    if scheduler:
        _need("distributed", extra="distributed")
    if db and db.startswith("postgresql"):
        _need("psycopg", extra="postgres")
    from collections.abc import Callable
    from contextlib import AbstractContextManager, nullcontext

    from analyzer.triage.render import BINARY, render
    from analyzer.triage.run import triage as run
    from analyzer.triage.summary import build

    paths = [str(p) for p in run_dirs]
    if from_file is not None:
        paths += [line.strip() for line in from_file if line.strip() and not line.startswith("#")]
    if not paths:
        raise click.UsageError("give at least one RUN_DIR (or --from-file)")
    for target in (output, tickets):
        for p in paths:
            _refuse_inside(Path(p), target)
    if fmt in BINARY and output is None:
        raise click.UsageError(f"--format {fmt} is binary: give -o FILE")
    cutoff = _cutoff(since)
    store = _open_store(db, no_db)
    show = sys.stderr.isatty() if progress is None else progress
    bar: AbstractContextManager[Callable[[int, int, str], None] | None] = nullcontext(None)
    if show:
        from analyzer.report.progress import progress_bar

        bar = progress_bar(len(paths))
    try:
        with bar as update:
            batch = run(paths, jobs=jobs, scheduler=scheduler, store=store, progress=update)
        result = build(batch, cutoff)
        if tickets is not None:
            from analyzer.triage.tickets import write_tickets

            written = write_tickets(result, tickets)
            click.echo(f"wrote {len(written) // 2} ticket(s) to {tickets}", err=True)
        text = render(result, fmt, color=sys.stdout.isatty() and output is None)
    except KeyboardInterrupt:
        click.echo("postmortem: interrupted; finished jobs are stored, a re-run resumes", err=True)
        sys.exit(130)
    except OSError as exc:  # a scheduler that cannot be reached
        click.echo(f"postmortem: {exc}", err=True)
        sys.exit(2)
    finally:
        if store is not None:
            store.close()
    click.echo(f"analyzed {batch.analyzed}, from history {batch.reused}, failed {len(batch.failed)}", err=True)
    if isinstance(text, bytes):
        assert output is not None
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_bytes(text)
        click.echo(f"wrote {output}", err=True)
    else:
        _write(text, output)


@click.command()
@click.option("--db", help="History database URL (default: $POSTMORTEM_DB, else the SQLite file in the user's data dir).")
@click.option("--since", help="Only jobs last seen within this (m, h, d, w), e.g. 7d.")
@click.option("--host", help="Only jobs that ran on this host.")
@click.option("--format", "fmt", type=click.Choice(HISTORY_FORMATS), default="table", show_default=True)
def history(db: str | None, since: str | None, host: str | None, fmt: str) -> None:
    """Per fingerprint and per node: count, first and last seen, jobs."""
    _need("sqlalchemy", "alembic", *(("pandas",) if fmt == "csv" else ()))
    from analyzer.triage.history import history as run
    from analyzer.triage.history import render_history

    cutoff = _cutoff(since)
    store = _open_store(db, False)
    assert store is not None
    try:
        data = run(store, since=cutoff, host=host)
    finally:
        store.close()
    click.echo(render_history(data, fmt), nl=False)


@click.group()
def ticket() -> None:
    """Tracker issues from the tickets that `triage --tickets DIR` wrote."""


@ticket.command("push")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option(
    "--github", "github", metavar="OWNER/REPO", help="Push to this GitHub repository (token: $GITHUB_TOKEN or $GH_TOKEN)."
)
@click.option("--gitlab", "gitlab", metavar="PROJECT", help="Push to this GitLab project, id or path (token: $GITLAB_TOKEN).")
@click.option("--api-url", help="The tracker's API base URL (GitHub Enterprise, a self-hosted GitLab).")
def ticket_push(directory: Path, github: str | None, gitlab: str | None, api_url: str | None) -> None:
    """Create one issue per fingerprint, or comment on the issue that already has it."""
    import os

    from analyzer.triage.push import PushError, push_github, push_gitlab, read_tickets

    if (github is None) == (gitlab is None):
        raise click.UsageError("give exactly one of --github OWNER/REPO or --gitlab PROJECT")
    tickets = read_tickets(directory)
    if not tickets:
        click.echo(f"postmortem: no ticket files in {directory}", err=True)
        sys.exit(2)
    env = ("GITHUB_TOKEN", "GH_TOKEN") if github else ("GITLAB_TOKEN",)
    token = next((os.environ[k] for k in env if os.environ.get(k)), None)
    if not token:
        click.echo(f"postmortem: set {' or '.join(env)} to a token that may write issues", err=True)
        sys.exit(2)
    try:
        if github:
            actions = push_github(tickets, github, token, **({"api_url": api_url} if api_url else {}))
        else:
            assert gitlab is not None
            actions = push_gitlab(tickets, gitlab, token, **({"api_url": api_url} if api_url else {}))
    except PushError as exc:
        click.echo(f"postmortem: {exc}", err=True)
        sys.exit(1)
    for a in actions:
        click.echo(f"{a.action:<10} #{a.issue:<6} {a.fingerprint}  {a.url}")
