"""Typer CLI: parses, calls ragkit.api, renders. One module per command group."""
