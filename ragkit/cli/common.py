"""Shared CLI helpers: consoles, error rendering, progress reporter."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from ragkit.errors import RagkitError
from ragkit.events import Reporter
from ragkit.render import write_json


def _width(stream) -> int | None:
    """Rich's 80 columns squeeze tables when output is piped; use 120 unless COLUMNS says otherwise."""
    return None if stream.isatty() or "COLUMNS" in os.environ else 120


console = Console(highlight=False, width=_width(sys.stdout))
err = Console(stderr=True, highlight=False, width=_width(sys.stderr))
STATE: dict[str, Any] = {"debug": False, "models": None}  # set by the root callback, each call


def fail(exc: RagkitError) -> None:
    """The error's line and its hint, as written (brackets in them, ``ragkit[llm]``, are text, not markup)."""
    err.print(f"[bold red]error:[/] {escape(exc.message)}", soft_wrap=True)
    if exc.hint:
        err.print(f"[dim]hint: {escape(exc.hint)}[/]", soft_wrap=True)


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Typed errors become one red line plus a hint and their exit code."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except RagkitError as exc:
            if STATE["debug"]:
                raise
            fail(exc)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err.print("[yellow]interrupted[/] (the index is unchanged unless the run had committed)")
            raise typer.Exit(130) from None

    return wrapper


def models():
    """The models the caller handed in as the context object (a ``ragkit.library.Models``: an application
    embedding the CLI, or a test; the root callback keeps it in ``STATE``), else none (``Models()``: the settings'
    models load). Every command that opens or writes an index does it through them (``models().open(...)``,
    ``models().index(...)``)."""
    from ragkit.library import Models

    given = STATE["models"]
    return given if isinstance(given, Models) else Models()


def interactive(quiet: bool) -> bool:
    return not quiet and err.is_terminal


class RichReporter(Reporter):
    """A rich progress bar on stderr when it is a terminal; warnings always go to stderr."""

    LABELS = {
        "model": "Loading the embedding model",
        "parse": "Parsing and chunking",
        "embed": "Embedding",
        "write": "Writing index",
        "extract": "Extracting entities (LLM)",
        "summaries": "Writing community summaries (LLM)",
        "fill": "Full model's vectors (each batch committed)",
        "ocr": "Reading scanned pages (OCR)",
    }

    def __init__(self, show: bool):
        self.progress = None
        self.tasks: dict[str, Any] = {}
        if show:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=err,
                transient=True,
            )

    def start(self, stage: str, total: int | None = None) -> None:
        if self.progress is None:
            return
        if not self.progress.live.is_started:
            self.progress.start()
        self.tasks[stage] = self.progress.add_task(self.LABELS.get(stage, stage.capitalize()), total=total)

    def advance(self, stage: str, n: int = 1) -> None:
        if self.progress is not None and stage in self.tasks:
            self.progress.advance(self.tasks[stage], n)
            task = next((t for t in self.progress.tasks if t.id == self.tasks[stage]), None) if stage == "ocr" else None
            if task is not None and task.speed:  # pages a second, as the reading goes
                self.progress.update(self.tasks[stage], description=f"{self.LABELS[stage]} · {task.speed:.2f} pages/s")

    def finish(self, stage: str) -> None:
        if self.progress is not None and stage in self.tasks:
            self.progress.remove_task(self.tasks.pop(stage))
            if not self.tasks:
                self.progress.stop()

    def warn(self, message: str) -> None:
        err.print(f"[yellow]warning:[/] {message}", soft_wrap=True)

    def close(self) -> None:
        if self.progress is not None and self.progress.live.is_started:
            self.progress.stop()


def print_json(obj: Any) -> None:
    write_json(obj)
