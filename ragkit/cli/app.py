"""The ragkit command. Heavy libraries load inside commands, never at start-up.

An application embedding the CLI, or a test, hands its models in as the context object, a
``ragkit.library.Models`` (``app(obj=Models(embedder=mine))``; typer's ``CliRunner().invoke(app, args,
obj=Models(embedder=fake, generator=gen))``): every command that opens or writes an index does it through them
(``ragkit.cli.common.models()``); without one the settings' models load."""

from __future__ import annotations

import typer

from ragkit import __version__
from ragkit.cli.check_cmd import check_cmd
from ragkit.cli.common import STATE
from ragkit.cli.eval_cmd import eval_cmd
from ragkit.cli.graph_cmd import graph_app
from ragkit.cli.index_cmd import index_cmd
from ragkit.cli.learn_cmd import feedback_cmd, learn_cmd
from ragkit.cli.models_cmd import models_app
from ragkit.cli.query_cmd import query_cmd
from ragkit.cli.serve_cmd import serve_cmd
from ragkit.cli.show_cmd import show_app
from ragkit.cli.stats_cmd import stats_cmd
from ragkit.config import FILE_FORMATS

app = typer.Typer(
    name="ragkit",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    help="Local retrieval toolkit: index folders of documents, query them, measure retrieval quality.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def index_help() -> str:
    """``ragkit index --help``: what it does and every format it reads (from the parser registry)."""
    by_format: dict[str, list[str]] = {}
    for suffix, name in FILE_FORMATS.items():
        by_format.setdefault(name, []).append(suffix)
    formats = "; ".join(f"{name} ({', '.join(suffixes)})" for name, suffixes in by_format.items())
    return f"Index documents: parse, chunk, embed and store (only what changed).\n\nReads {formats}."


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ragkit {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
):
    STATE["debug"] = debug
    STATE["models"] = ctx.obj  # models handed in (ragkit.cli.common.models), or None


app.command("index", help=index_help())(index_cmd)
app.command("query")(query_cmd)
app.command("eval")(eval_cmd)
app.command("stats")(stats_cmd)
app.command("serve")(serve_cmd)
app.command("check")(check_cmd)
app.command("feedback")(feedback_cmd)
app.command("learn")(learn_cmd)
app.add_typer(graph_app, name="graph")
app.add_typer(show_app, name="show")
app.add_typer(models_app, name="models")


def main() -> None:
    """The full CLI (``ragkit.cli.main`` tries a running server first)."""
    app()
