"""ragkit check"""

from __future__ import annotations

from typing import Optional

import typer

from ragkit.cli.common import console, err, handle_errors, print_json
from ragkit.errors import IndexCorrupt


@handle_errors
def check_cmd(
    index: Optional[str] = typer.Option(None, "--index", "-i", help="Index name (under ./indexes) or directory."),
    repair: bool = typer.Option(False, "--repair", help="Rebuild what can be rebuilt from the store (graphs, vocabulary)."),
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
):
    """Verify an index: manifest, DuckDB run, LanceDB version and row counts, graphs. Exit 0 when whole, 7 when not."""
    from ragkit.config import resolve_index_dir
    from ragkit.errors import IndexNotFound
    from ragkit.store import check as checker

    index_dir = resolve_index_dir(index)
    if not (index_dir / "manifest.json").exists():
        raise IndexNotFound(f"no index at {index_dir}")
    problems, facts = checker.check(index_dir)
    repaired = []
    if repair and problems and all(p.derived for p in problems):
        checker.repair(index_dir)
        repaired, (problems, facts) = [p.what for p in problems], checker.check(index_dir)
    if as_json:
        print_json({"index": str(index_dir), "ok": not problems, **facts, "repaired": repaired,
                    "problems": [{"what": p.what, "repair": p.repair, "derived": p.derived} for p in problems]})
    else:
        for what in repaired:
            console.print(f"[green]repaired:[/] {what}")
        for p in problems:
            err.print(f"[red]problem:[/] {p.what}  [dim](repair: {p.repair})[/]", soft_wrap=True)
        if not problems:
            console.print(f"[bold green]ok[/] {index_dir}: run {facts['run']}, LanceDB {facts['lance_table']} "
                          f"v{facts['lance_version']}, {facts['lance_rows']:,} chunks, graphs of the run")
    if problems:
        raise IndexCorrupt(f"{index_dir}: {len(problems)} problem(s)",
                           hint="ragkit check --repair" if all(p.derived for p in problems) else checker.REBUILD)
