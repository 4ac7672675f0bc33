"""A progress bar for long batches, drawn on a terminal's stderr with rich."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(total: int, label: str = "analyzing") -> Iterator[Callable[[int, int, str], None]]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)

        def update(done: int, total_: int, job: str) -> None:
            bar.update(task, completed=done, total=total_, description=f"{label} {job.rsplit('/', 1)[-1][:30]}")

        yield update
