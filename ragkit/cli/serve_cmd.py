"""ragkit serve"""

from __future__ import annotations

from pathlib import Path

import typer

from ragkit.cli.common import console, err, handle_errors
from ragkit.cli.options import IndexOpt


@handle_errors
def serve_cmd(
    index: IndexOpt = None,
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on (loopback by default; any other needs --tokens)."
    ),
    port: int = typer.Option(8765, "--port", "-p", help="TCP port (0: any free port)."),
    tokens: Path = typer.Option(
        None,
        "--tokens",
        help="TOML file of bearer tokens, each with the collections it may read (values from environment variables).",
    ),
    workers: int = typer.Option(2, "--workers", "-w", min=1, help="Worker processes answering queries side by side."),
    mcp: bool = typer.Option(
        False,
        "--mcp",
        help="Serve MCP over stdio instead (the tools the HTTP server has at /mcp) for agents and editors.",
    ),
):
    """Serve one index over HTTP from warm worker processes (POST /v1/query, MCP at /mcp, OpenAPI docs at /docs),
    or as MCP tools over stdio.

    While the HTTP server runs, `ragkit query --json` on the same index asks it instead of loading the index."""
    import logging

    if mcp:
        from ragkit.serve.mcp_tools import serve_mcp

        serve_mcp(index)
        return
    from ragkit.serve.http import serve

    logging.basicConfig(level=logging.WARNING, format="ragkit serve: %(message)s")
    logging.getLogger("ragkit.serve").setLevel(logging.INFO)  # (the MCP SDK's INFO lines are not for users)

    def ready(info):
        who = "tokens required" if info["auth"] else "no token needed"
        err.print(
            f"[bold green]ragkit serve[/] {info['url']}  (docs: {info['url']}/docs, MCP: {info['url']}/mcp; "
            f"{len(info['workers'])} workers, {who}) · Ctrl-C stops it"
        )

    try:
        serve(index, host, port, on_ready=ready, tokens=tokens, workers=workers)
    except KeyboardInterrupt:  # (uvicorn stops on Ctrl-C, then raises it again)
        pass
    console.print("[dim]stopped[/]")
