"""ragkit graph stats | export"""

from __future__ import annotations

from pathlib import Path

import typer

from ragkit.cli.common import console, handle_errors, print_json
from ragkit.errors import BadQuery

graph_app = typer.Typer(
    help="Look at the evidence graph (documents, sections, chunks, references, versions).", no_args_is_help=True
)


@graph_app.command("stats")
@handle_errors
def stats_cmd(
    index: str | None = typer.Option(None, "--index", "-i", help="Index name (under ./indexes) or directory."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
):
    """Node and edge counts by kind, and how many references resolved."""
    from ragkit import api

    reader = api.open_index(index)
    st = reader.graph.stats()
    with reader.duck() as store:
        st["references"] = store.rows(
            "SELECT kind, count(*) AS detected, count(resolved_document_id) AS resolved_document, "
            "count(resolved_section_id) AS resolved_section FROM refs GROUP BY kind ORDER BY kind"
        )
        st["communities"] = store.rows(
            "SELECT level, count(*) AS communities, CAST(avg(size) AS DOUBLE) AS mean_size "
            "FROM communities GROUP BY level ORDER BY level"
        )
        st["knowledge"] = store.rows(
            "SELECT collection, (SELECT count(*) FROM entities e WHERE e.collection = d.collection) AS entities, "
            "(SELECT count(*) FROM relations r WHERE r.collection = d.collection) AS relations, "
            "(SELECT count(*) FROM communities c WHERE c.collection = d.collection) AS communities "
            "FROM (SELECT DISTINCT collection FROM documents) d ORDER BY collection"
        )
    st["entity_graph"] = reader.entity_graph.stats()
    if as_json:
        print_json(st)
        return
    from rich.table import Table

    t = Table(title=f"evidence graph of {reader.index_dir}", show_header=False)
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
    out: Path = typer.Argument(..., help="File to write."),
    fmt: str = typer.Option("graphml", "--format", "-f", help="graphml | json (networkx node-link)."),
    index: str | None = typer.Option(None, "--index", "-i", help="Index name (under ./indexes) or directory."),
):
    """Write the evidence graph for Gephi (GraphML) or a notebook (node-link JSON)."""
    from ragkit import api

    if fmt not in ("graphml", "json"):
        raise BadQuery(f"unknown format {fmt!r}", hint="Choose graphml or json")
    g = api.open_index(index).graph
    g.export(out, fmt)
    console.print(f"wrote {g.g.vcount()} nodes and {g.g.ecount()} edges to {out}")
