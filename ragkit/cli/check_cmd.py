"""ragkit check"""

from __future__ import annotations

from typing import Annotated

import typer

from ragkit.cli.common import console, err, handle_errors, print_json
from ragkit.cli.options import AsJson, IndexOpt
from ragkit.errors import IndexCorrupt


@handle_errors
def check_cmd(
    index: IndexOpt = None,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Rebuild the graphs and vocabulary from the store, go back to the newest whole run when the manifest "
            "is lost or names a damaged one, remove what an unfinished run left.",
        ),
    ] = False,
    as_json: AsJson = False,
):
    """Verify an index: manifest, DuckDB run, LanceDB version and row counts, graphs. Exit 0 when whole, 7 when not."""
    from ragkit import library

    report = library.check(index, repair, on_wait=lambda msg: err.print(f"[yellow]{msg}[/]"))
    if as_json:
        print_json(report.to_dict())
    else:
        _print(report)
    if report.problems:
        raise IndexCorrupt(f"{report.index}: {len(report.problems)} problem(s)", hint=report.hint)


def _print(report) -> None:
    for what in report.repaired:
        console.print(f"[green]repaired:[/] {what}")
    for p in report.problems:
        err.print(f"[red]problem:[/] {p.what}  [dim](repair: {p.repair})[/]", soft_wrap=True)
    facts = report.facts
    if facts.get("leftovers"):
        console.print(
            f"[dim]note: files of an unfinished run (never read; the next run or --repair removes "
            f"them): {', '.join(facts['leftovers'])}[/]",
            soft_wrap=True,
        )
    scanned = facts.get("scanned") or {}
    if scanned.get("pages_read") or scanned.get("pages_unread"):
        unread = scanned["pages_unread"]
        console.print(
            f"scanned pages: {scanned['pages_read']:,} read by OCR"
            + (f", {unread:,} not read ({', '.join(scanned['unread_files'])}): {scanned['ocr']}" if unread else ""),
            soft_wrap=True,
        )
    if not report.problems:
        console.print(
            f"[bold green]ok[/] {report.index}: run {facts['run']}, LanceDB {facts['lance_table']} "
            f"v{facts['lance_version']}, {facts['lance_rows']:,} chunks, graphs of the run"
        )
