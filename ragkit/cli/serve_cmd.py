"""ragkit serve"""

from __future__ import annotations

import typer

from ragkit.cli.common import console, err, handle_errors
from ragkit.cli.options import IndexOpt


@handle_errors
def serve_cmd(
    index: IndexOpt = None,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default)."),
    port: int = typer.Option(8765, "--port", "-p", help="TCP port (0: any free port)."),
    mcp: bool = typer.Option(
        False,
        "--mcp",
        help="Serve MCP over stdio instead (tools: search, get_section, answer, stats) for agents and editors.",
    ),
):
    """Serve one index over HTTP from a warm process (POST /v1/query, OpenAPI docs at /docs), or as MCP tools.

    While the HTTP server runs, `ragkit query --json` on the same index asks it instead of loading the index."""
    if mcp:
        from ragkit.serve.mcp_tools import serve_mcp

        serve_mcp(index)
        return
    from ragkit.serve.http import serve

    def ready(info):
        err.print(f"[bold green]ragkit serve[/] {info['url']}  (docs: {info['url']}/docs) · Ctrl-C stops it")

    serve(index, host, port, on_ready=ready)
    console.print("[dim]stopped[/]")
