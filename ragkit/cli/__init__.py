"""Typer CLI: parses, calls ragkit.api, renders. One module per command group."""

import sys


def main() -> None:
    """The ``ragkit`` command: a simple ``query --json`` through a running server first (``fast.py``), then
    the full CLI."""
    from ragkit.cli.fast import try_query

    code = try_query(sys.argv)
    if code is not None:
        sys.exit(code)
    from ragkit.cli.app import app

    app()
