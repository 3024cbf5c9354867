"""ragkit models | ragkit models serve"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragkit import extras
from ragkit.cli import options as o
from ragkit.cli.common import console, err, handle_errors, print_json
from ragkit.config import load_config, override
from ragkit.errors import BadInput

models_app = typer.Typer(
    help="The models of each role (embed, rerank, generate): what is configured, where it comes from, a probe.",
    invoke_without_command=True,
)


@models_app.callback()
@handle_errors
def models_cmd(
    ctx: typer.Context,
    index: o.IndexOpt = None,
    embed_model: o.EmbedModel = None,
    rerank_model: o.RerankModel = None,
    model: o.Model = None,
    no_probe: Annotated[bool, typer.Option("--no-probe", help="Only what is configured; load nothing.")] = False,
    as_json: o.AsJson = False,
):
    """Each role's model (the index's own embedder with --index), where it comes from, and a probe: dimension,
    texts/s and query latency (embed), ms per candidate (rerank), first token and tokens/s (generate)."""
    if ctx.invoked_subcommand is not None:
        return
    from ragkit import measure

    icfg, qcfg = load_config()
    icfg = override(icfg, embed_model=embed_model)
    qcfg = override(qcfg, rerank_model=rerank_model, model=model)
    rows = measure.models(icfg, qcfg, index_dir=index, probe=not no_probe)
    parts = extras.status()
    if as_json:
        print_json({"schema": "ragkit.models/1", "roles": rows, "extras": parts})
        return
    t = Table(title="models")
    for col in ("role", "spec", "kind", "ready", "probe"):
        t.add_column(col, overflow="fold")
    for r in rows:
        found = r.get("probe")
        shown = ", ".join(f"{k} {v}" for k, v in found.items() if k not in ("notes", "sample")) if found else ""
        if r.get("error"):
            shown = f"[red]{escape(r['error'])}[/]" + (f"\n[dim]{escape(r['hint'])}[/]" if r.get("hint") else "")
        notes = (found or {}).get("notes") or []
        ready = "" if not r["spec"] else "yes" if r.get("ready", True) else f"[red]needs ragkit\\[{r['extra']}][/]"
        t.add_row(
            r["role"], r["spec"] or "[dim](none)[/]", r.get("kind", ""), ready, "\n".join([shown, *notes]).strip()
        )
    console.print(t)
    t = Table(title="extras (pip install ragkit installs none of them)")
    for col in ("extra", "installed", "for"):
        t.add_column(col, overflow="fold")
    for part in parts:
        t.add_row(part["extra"], "yes" if part["installed"] else "[red]no[/]", part["serves"])
    console.print(t)
    for part in parts:
        if not part["installed"]:
            console.print(f"[dim]{part['extra']}: {escape(part['install'])}[/]", soft_wrap=True)
    for r in rows:
        if r["bundled"]:
            console.print(f"[dim]bundled {r['role']}: {'; '.join(r['bundled'])}[/]", soft_wrap=True)


@models_app.command("serve")
@handle_errors
def serve_cmd(
    embed_model: o.EmbedModel = None,
    rerank_model: o.RerankModel = None,
    model: o.Model = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", help="TCP port (0: any free port).")] = 8766,
):
    """Serve models over the APIs other tools speak: /v1/embeddings, /v1/rerank (Cohere/Jina shape),
    /v1/chat/completions (streamed). Only the roles given are served."""
    from ragkit.serve.models_http import ServedModels, serve_models

    if not (embed_model or rerank_model or model):
        raise BadInput("no model to serve", hint="Give --embed-model, --rerank-model and/or --model.")
    served = ServedModels(embed_model, rerank_model, model)

    def ready(info):
        names = ", ".join(f"{role} {name}" for role, name in info["models"].items())
        err.print(f"[bold green]ragkit models serve[/] {info['url']}  ({names}) · Ctrl-C stops it")

    serve_models(served, host, port, on_ready=ready)
