"""ragkit show entity NAME"""

from __future__ import annotations

from typing import Annotated

import typer

from ragkit.cli.common import console, handle_errors, models, print_json
from ragkit.cli.options import AsJson, IndexOpt

show_app = typer.Typer(help="Show what the index knows about one thing.", no_args_is_help=True)


@show_app.command("passage")
@handle_errors
def passage_cmd(
    query_id: Annotated[str, typer.Argument(help="The query_id a result carries.")],
    rank: Annotated[int, typer.Argument(help="The passage's rank in that result.")],
    index: IndexOpt = None,
    as_json: AsJson = False,
):
    """The whole section a passage of an earlier query comes from (kept as a click on it, for ragkit learn)."""

    found = models().open(index).open_passage(query_id, rank, source="cli")
    if as_json:
        print_json(found)
        return
    console.rule(f"{found.get('path', '')} · {found.get('breadcrumb', '')}")
    console.print(found.get("text", ""), highlight=False)


@show_app.command("entity")
@handle_errors
def entity_cmd(
    name: Annotated[str, typer.Argument(help="Entity name or alias (case and punctuation do not matter).")],
    index: IndexOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Relations and chunks to list.")] = 10,
    as_json: AsJson = False,
):
    """An entity's aliases, type, mentions, strongest relations and the chunks that mention it."""

    info = models().open(index).entity(name, limit)
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
