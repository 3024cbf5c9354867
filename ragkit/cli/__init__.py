"""Typer CLI: parses, calls ragkit.api, renders. One module per command group."""

import sys

from ragkit.cli.fast import try_query


def main() -> None:
    """The ``ragkit`` command: a simple ``query --json`` through a running server first (``fast.py``), then
    the full CLI."""
    code = try_query(sys.argv)
    if code is not None:
        sys.exit(code)
    from ragkit.cli.app import app  # typer, rich and the commands: only when the server did not answer

    app()
