"""ragkit check"""

from __future__ import annotations

import typer

from ragkit.cli.common import console, err, handle_errors, print_json
from ragkit.errors import IndexCorrupt


@handle_errors
def check_cmd(
    index: str | None = typer.Option(None, "--index", "-i", help="Index name (under ./indexes) or directory."),
    repair: bool = typer.Option(
        False,
        "--repair",
        help="Rebuild the graphs and vocabulary from the store, go back to the "
        "newest whole run when the manifest is lost or names a damaged one, remove what an "
        "unfinished run left.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
):
    """Verify an index: manifest, DuckDB run, LanceDB version and row counts, graphs. Exit 0 when whole, 7 when not."""
    from ragkit.config import resolve_index_dir
    from ragkit.errors import IndexNotFound
    from ragkit.store import check as checker
    from ragkit.store import remote

    index_dir = resolve_index_dir(index)
    remote.pull(index_dir, required=False)  # an index on object storage: what the manifest names, into the mirror
    if not (index_dir / "lance").is_dir() and not (index_dir / "manifest.json").exists():
        raise IndexNotFound(f"no index at {index if remote.uri_of(index_dir) else index_dir}")
    problems, facts = checker.check(index_dir)
    repaired: list[str] = []
    if repair and (problems or facts.get("leftovers")):
        with remote.writing(index_dir, wait=True, on_wait=lambda msg: err.print(f"[yellow]{msg}[/]")) as bucket:
            repaired = checker.repair(index_dir, bucket)
        problems, facts = checker.check(index_dir)
    name = remote.display(index_dir)
    if as_json:
        print_json(
            {
                "index": name,
                "ok": not problems,
                **facts,
                "repaired": repaired,
                "problems": [{"what": p.what, "repair": p.repair, "derived": p.derived} for p in problems],
            }
        )
    else:
        for what in repaired:
            console.print(f"[green]repaired:[/] {what}")
        for p in problems:
            err.print(f"[red]problem:[/] {p.what}  [dim](repair: {p.repair})[/]", soft_wrap=True)
        if facts.get("leftovers"):
            console.print(
                f"[dim]note: files of an unfinished run (never read; the next run or --repair removes "
                f"them): {', '.join(facts['leftovers'])}[/]",
                soft_wrap=True,
            )
        if not problems:
            console.print(
                f"[bold green]ok[/] {name}: run {facts['run']}, LanceDB {facts['lance_table']} "
                f"v{facts['lance_version']}, {facts['lance_rows']:,} chunks, graphs of the run"
            )
    if problems:
        raise IndexCorrupt(
            f"{name}: {len(problems)} problem(s)",
            hint=checker.REPAIR if all(p.repair == checker.REPAIR for p in problems) else checker.REBUILD,
        )
