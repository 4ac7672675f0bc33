"""Command-line wiring only: options to library calls, exit codes, printing.

Exit codes: 0 done; 1 the check found problems (signatures check, eval below --min-accuracy);
2 bad usage or input that cannot be analyzed at all (a missing run dir).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import click

from analyzer import __version__
from analyzer.cli.common import refuse_inside as _refuse_inside
from analyzer.cli.common import write as _write
from analyzer.parse.registry import names as parser_names
from analyzer.report.registry import RENDERERS

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _size(text: str, option: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.I)
    if not m:
        raise click.BadParameter(f"{text!r}: a size such as 512M or 2G", param_hint=option)
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="postmortem")
def main() -> None:
    """Why did this distributed GPU training job die?"""


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(list(RENDERERS)), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write the report to this file.")
@click.option("--follow-symlinks", is_flag=True, help="Follow symlinks that lead out of the run dir.")
@click.option("--core-timeout", type=float, default=60.0, show_default=True, help="Seconds gdb may spend on one core.")
@click.option("--no-redact", is_flag=True, help="Keep secrets (tokens, passwords) seen in logs in the report.")
@click.option("--color/--no-color", default=None, help="Color in the terminal report (default: when a terminal).")
@click.option("-v", "--verbose", is_flag=True, help="Text format: list every evidence line and timeline event.")
@click.option("--width", type=click.IntRange(40, 1000), help="Text format: columns (default: the terminal's).")
@click.option("--max-file-size", default="2G", show_default=True, help="Content read per file (decompressed), e.g. 512M, 2G.")
@click.option("--max-total-size", default="32G", show_default=True, help="Content read from the whole run dir.")
@click.option("--time-budget", type=float, default=900.0, show_default=True, help="Seconds for reading the whole run dir.")
@click.option("--core-budget", type=float, default=300.0, show_default=True, help="Seconds for all cores together.")
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1, 64),
    default=None,
    help="Processes that scan a big run dir (default: every CPU; 1: one process).",
)
def analyze(
    run_dir: Path,
    fmt: str,
    output: Path | None,
    follow_symlinks: bool,
    core_timeout: float,
    no_redact: bool,
    color: bool | None,
    verbose: bool,
    width: int | None,
    max_file_size: str,
    max_total_size: str,
    time_budget: float,
    core_budget: float,
    jobs: int | None,
) -> None:
    """Name the root cause of the failed job that left RUN_DIR (a directory, one log file, or an
    archive of a run dir: .tar, .tar.gz/.tgz, .tar.xz, .tar.bz2, .tar.zst, .zip, read in place)."""
    from analyzer.events.ingest import Limits
    from analyzer.pipeline import Options
    from analyzer.pipeline import analyze as run
    from analyzer.report import render
    from analyzer.sources.discover import RunDirError

    _refuse_inside(run_dir, output)
    try:
        limits = Limits(
            _size(max_file_size, "--max-file-size"), _size(max_total_size, "--max-total-size"), time_budget, core_budget
        )
        opts = Options(
            follow_symlinks=follow_symlinks, core_timeout=core_timeout, redact=not no_redact, limits=limits, workers=jobs
        )
        report = run(run_dir, opts)
    except RunDirError as exc:
        click.echo(f"postmortem: {exc}", err=True)
        sys.exit(2)
    if not report.sources:
        click.echo(f"postmortem: {run_dir}: no files in this directory; give the directory the job wrote its logs to", err=True)
        sys.exit(2)
    use_color = (sys.stdout.isatty() if color is None else color) and output is None
    text = render(report, fmt, color=use_color, width=width, verbose=verbose)
    if output is None:
        _write(text, None)
        return
    from analyzer.output import OutputRefused, write_outside

    try:  # checked again on the very file system objects, and written atomically
        write_outside(text, output, run_dir)
    except OutputRefused as exc:
        click.echo(f"postmortem: -o {exc}", err=True)
        sys.exit(2)
    click.echo(f"wrote {_shown(output)}", err=True)


def _shown(path: Path) -> str:
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


@main.command()
@click.argument("kind", type=click.Choice(["auto", *parser_names()]))
@click.argument("file", type=click.Path(path_type=Path, exists=True, dir_okay=False))
def parse(kind: str, file: Path) -> None:
    """Print the parsed events of one FILE as JSON (KIND: a grammar name, or auto)."""
    from analyzer.parse.dump import dump_file

    try:
        data = dump_file(kind, file)
    except ValueError as exc:
        click.echo(f"postmortem: {exc}", err=True)
        sys.exit(2)
    click.echo(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str))


@main.command()
@click.argument("core", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option(
    "--exe",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="The executable (default: found from the core's notes).",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--timeout", type=float, default=60.0, show_default=True, help="Seconds gdb may run.")
def core(core: Path, exe: Path | None, fmt: str, timeout: float) -> None:
    """What gdb sees in a CORE: signal, fault address and its mapping, all threads, the crash thread."""
    from analyzer.report.core import core_to_dict, render_core_text
    from analyzer.sources.coredump import CoreError, analyze_core

    try:
        info = analyze_core(core, exe=exe, timeout=timeout)
    except CoreError as exc:
        click.echo(f"postmortem: {core}: {exc}", err=True)
        sys.exit(2)
    if fmt == "json":
        click.echo(json.dumps(core_to_dict(info), indent=2, sort_keys=True))
    else:
        click.echo(render_core_text(info), nl=False)


@main.group()
def signatures() -> None:
    """The signature database."""


@signatures.command("list")
@click.option("--category", help="Only this category.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def signatures_list(category: str | None, fmt: str) -> None:
    """List every signature: id, category, role, confidence, title."""
    from analyzer.signatures.loader import database

    sigs = [s for s in database() if category is None or s.category.value == category]
    if fmt == "json":
        click.echo(
            json.dumps(
                [
                    {
                        "id": s.id,
                        "category": s.category.value,
                        "subcategory": s.subcategory,
                        "role": s.role.value,
                        "confidence": s.confidence,
                        "title": s.title,
                        "file": s.file,
                        "source": [{"project": x.project, "file": x.file, "versions": list(x.versions)} for x in s.sources],
                    }
                    for s in sigs
                ],
                indent=2,
            )
        )
        return
    for s in sigs:
        click.echo(f"{s.id:<48} {s.category.value:<17} {s.role.value:<11} {s.confidence:.2f}  {s.title}")
    click.echo(f"{len(sigs)} signatures", err=True)


@signatures.command("show")
@click.argument("sig_id")
def signatures_show(sig_id: str) -> None:
    """Print one signature's file."""
    from analyzer.paths import signatures_dir
    from analyzer.signatures.loader import database

    for s in database():
        if s.id == sig_id:
            click.echo((signatures_dir().parent / s.file).read_text(encoding="utf-8"), nl=False)
            return
    click.echo(f"postmortem: no signature {sig_id!r} (see `postmortem signatures list`)", err=True)
    sys.exit(2)


@signatures.command("check")
@click.option("--dir", "root", type=click.Path(path_type=Path, file_okay=False, exists=True), help="Another signature dir.")
def signatures_check(root: Path | None) -> None:
    """Validate every signature and run its inline tests; print every problem with file and line."""
    from analyzer.signatures.check import check_all

    problems, count = check_all(root)
    for p in problems:
        click.echo(str(p))
    click.echo(f"{count} signatures, {len(problems)} problem(s)", err=True)
    sys.exit(1 if problems else 0)


def _catalog_options(f: Callable[..., None]) -> Callable[..., None]:
    """The options `signatures coverage` and `signatures verdicts` share."""
    f = click.option(
        "--dir", "root", type=click.Path(path_type=Path, file_okay=False, exists=True), help="Another signature dir."
    )(f)
    f = click.option("--summary", "brief", is_flag=True, help="Counts only, without the list of messages.")(f)
    return click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")(f)


def _catalog_report(module: ModuleType, fmt: str, brief: bool, root: Path | None) -> None:
    """Measure the emitter catalogs with `module` (its measure, as_json, as_text) and print it;
    exit 1 when a catalog has problems."""
    results, problems = module.measure(root)
    if fmt == "json":
        click.echo(json.dumps(module.as_json(results, problems), indent=2, sort_keys=True))
    else:
        click.echo(module.as_text(results, problems, verbose=not brief))
    sys.exit(1 if problems else 0)


@signatures.command("coverage")
@_catalog_options
def signatures_coverage(fmt: str, brief: bool, root: Path | None) -> None:
    """Per emitter and category, which messages the emitters print the signatures recognise."""
    from analyzer.signatures import coverage

    _catalog_report(coverage, fmt, brief, root)


@signatures.command("verdicts")
@_catalog_options
def signatures_verdicts(fmt: str, brief: bool, root: Path | None) -> None:
    """The verdict each emitter catalog line gets when a run dir holds nothing else."""
    from analyzer.corpus import verdicts

    _catalog_report(verdicts, fmt, brief, root)


@main.command("eval")
@click.argument("corpus_dir", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option(
    "--folds",
    type=int,
    default=5,
    show_default=True,
    help="k-fold cross-validation grouped by source: the model is retrained without each fold (needs the ml extra).",
)
@click.option("--no-cv", is_flag=True, help="Evaluate the shipped model as it is (its training cases included).")
@click.option("--plot", type=click.Path(path_type=Path), help="Write a PNG of the confusion matrix and reliability curve.")
@click.option("--min-accuracy", type=float, default=None, help="Exit 1 when accuracy is below this (0..1).")
@click.option(
    "--exclude-split",
    "exclude_splits",
    multiple=True,
    metavar="SPLIT",
    help="Leave out the cases of this split (e.g. heldout) from cross-validation; repeatable.",
)
@click.option(
    "--unseen-wording",
    is_flag=True,
    help="Analyze every case again without the root-cause signatures of its own category (as if its messages had never "
    "been read) and count what the verdicts become (the shipped model).",
)
def evaluate(
    corpus_dir: Path,
    fmt: str,
    folds: int,
    no_cv: bool,
    plot: Path | None,
    min_accuracy: float | None,
    exclude_splits: tuple[str, ...],
    unseen_wording: bool,
) -> None:
    """Accuracy, per-category precision/recall/F1, confusion matrix and reliability on labeled cases."""
    from analyzer.corpus.evaluate import evaluate as run
    from analyzer.corpus.evaluate import render_text

    if unseen_wording:
        from analyzer.corpus import unseen

        measured = unseen.unseen_wording(corpus_dir)
        text = json.dumps(measured.to_dict(), indent=2, sort_keys=True) + "\n" if fmt == "json" else unseen.render_text(measured)
        click.echo(text, nl=False)
        return
    if no_cv:
        result = run(corpus_dir)
    else:
        from analyzer.corpus.train import ML_HINT, cross_validate, ml_missing

        missing = ml_missing()
        if missing:
            click.echo(
                f"postmortem: eval retrains the classifier on each fold, which needs scikit-learn ({missing}).\n"
                f"  install the ml extra: {ML_HINT}\n"
                "  or score the shipped model as it is: postmortem eval --no-cv CORPUS_DIR",
                err=True,
            )
            sys.exit(2)
        result = cross_validate(corpus_dir, folds, exclude_splits)
    if plot is not None:
        from analyzer.corpus.plot import write_plot

        try:
            write_plot(result, plot)
        except ImportError as exc:
            click.echo(
                f"postmortem: --plot needs matplotlib ({exc}); install the ml extra: pip install 'postmortem[ml]'", err=True
            )
    click.echo(json.dumps(result.to_dict(), indent=2, sort_keys=True) if fmt == "json" else render_text(result), nl=False)
    if min_accuracy is not None and result.accuracy() < min_accuracy:
        sys.exit(1)


@main.command()
@click.argument("corpus_dir", type=click.Path(path_type=Path, file_okay=False, exists=True), default="corpora")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), help="Where to write the model (default: the shipped model file)."
)
@click.option("--folds", type=int, default=5, show_default=True, help="Folds for fitting the calibration.")
def train(corpus_dir: Path, output: Path | None, folds: int) -> None:
    """Train the classifier on labeled cases and write it as JSON (deterministic)."""
    import time

    from analyzer.corpus.train import ML_HINT, ml_missing, to_json
    from analyzer.corpus.train import train as run

    missing = ml_missing()
    if missing:
        click.echo(f"postmortem: training needs scikit-learn ({missing}); install the ml extra: {ML_HINT}", err=True)
        sys.exit(2)
    from analyzer.classify.model import MODEL_PATH

    start = time.monotonic()
    model, n = run(corpus_dir, folds)
    target = output or MODEL_PATH
    target.write_text(json.dumps(to_json(model), sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    click.echo(
        f"trained on {n} cases, {len(model.index)} features, {len(model.classes)} classes in "
        f"{time.monotonic() - start:.1f} s; wrote {target}",
        err=True,
    )


from analyzer.cli import fleet  # noqa: E402  (the fleet commands, registered on the one group)

for _command in (fleet.triage, fleet.history, fleet.ticket):
    main.add_command(_command)

if __name__ == "__main__":  # pragma: no cover
    main()
