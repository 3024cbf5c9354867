"""ragkit show entity NAME"""

from __future__ import annotations

import typer

from ragkit.cli.common import console, handle_errors, print_json
from ragkit.errors import BadQuery

show_app = typer.Typer(help="Show what the index knows about one thing.", no_args_is_help=True)


@show_app.command("entity")
@handle_errors
def entity_cmd(
    name: str = typer.Argument(..., help="Entity name or alias (case and punctuation do not matter)."),
    index: str | None = typer.Option(None, "--index", "-i", help="Index name (under ./indexes) or directory."),
    limit: int = typer.Option(10, "--limit", "-n", help="Relations and chunks to list."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
):
    """An entity's aliases, type, mentions, strongest relations and the chunks that mention it."""
    from ragkit import api

    reader = api.open_index(index)
    with reader.duck() as store:
        info = store.entity(name, limit)
    if info is None:
        raise BadQuery(f"no entity {name!r} in {reader.index_dir}", hint="Entity names come from the indexed text.")
    if as_json:
        print_json(info)
        return
    console.print(
        f"[bold]{info['name']}[/] [dim]({info['entity']}, {info['type']})[/] — {info['mentions']} "
        f"mentions in {info['chunks']} chunks"
    )
    console.print(f"aliases: {', '.join(info['aliases'])}", soft_wrap=True)
    for row in info["collections"]:
        console.print(
            f"[magenta]{row['collection']}[/]: {row['description'] or '[dim](no describing sentence)[/]'}",
            soft_wrap=True,
        )
    for r in info["relations"]:
        console.print(
            f"  [cyan]{r['other']}[/] weight {r['weight']:.2f}: [dim]{(r['description'] or '')[:160]}[/]",
            soft_wrap=True,
        )
    for c in info["sources"]:
        console.print(f"  {c['path']}:{c['line_start']}-{c['line_end']}  [magenta]{c['header']}[/]", soft_wrap=True)
