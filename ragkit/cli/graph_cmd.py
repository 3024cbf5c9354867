"""ragkit graph stats | export"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ragkit.cli.common import console, handle_errors, models, print_json
from ragkit.cli.options import AsJson, IndexOpt

graph_app = typer.Typer(
    help="Look at the evidence graph (documents, sections, chunks, references, versions).", no_args_is_help=True
)


@graph_app.command("stats")
@handle_errors
def stats_cmd(index: IndexOpt = None, as_json: AsJson = False):
    """Node and edge counts by kind, and how many references resolved."""

    ix = models().open(index)
    st = ix.graph_stats()
    if as_json:
        print_json(st)
        return
    t = Table(title=f"evidence graph of {ix.path}", show_header=False)
    t.add_column(style="bold")
    t.add_column()
    t.add_row("nodes", f"{st['nodes']}  ({', '.join(f'{k} {v}' for k, v in st['node_kinds'].items())})")
    t.add_row("edges", f"{st['edges']}  ({', '.join(f'{k} {v}' for k, v in st['edge_types'].items())})")
    eg = st["entity_graph"]
    t.add_row(
        "entity graph",
        f"{eg['entities']} entities, {eg['relation_edges']} relations, "
        f"{eg['mention_edges']} mention edges to {eg['chunks']} chunks",
    )
    for k in st["knowledge"]:
        t.add_row(
            f"collection {k['collection']}",
            f"{k['entities']} entities, {k['relations']} relations, {k['communities']} communities",
        )
    for c in st["communities"]:
        t.add_row(f"communities, level {c['level']}", f"{c['communities']} (mean size {c['mean_size']:.1f} entities)")
    for r in st["references"]:
        t.add_row(
            f"{r['kind']} references",
            f"{r['detected']} detected, {r['resolved_document']} resolved to a "
            f"document, {r['resolved_section']} to a section",
        )
    console.print(t)


@graph_app.command("export")
@handle_errors
def export_cmd(
    out: Annotated[Path, typer.Argument(help="File to write.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="graphml | json (networkx node-link).")] = "graphml",
    index: IndexOpt = None,
):
    """Write the evidence graph for Gephi (GraphML) or a notebook (node-link JSON)."""

    nodes, edges = models().open(index).export_graph(out, fmt)
    console.print(f"wrote {nodes} nodes and {edges} edges to {out}")
