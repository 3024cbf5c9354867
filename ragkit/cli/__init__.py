"""Typer CLI: parses, calls ragkit.library (``Index``), renders. One module per command group."""

import sys

from ragkit.cli.fast import try_query

ANSWER_MODES = ("auto", "extract", "generate")  # ragkit.config.ANSWER_MODES, spelled out: the fast path imports little


def answer_modes(argv: list[str]) -> list[str]:
    """``--answer MODE`` (``-a MODE``) as ``--answer --answer-mode MODE``: ``--answer`` stays a flag, so that
    ``ragkit query --answer "question"`` keeps meaning what it says."""
    out = []
    for i, arg in enumerate(argv):
        if arg in ANSWER_MODES and i and argv[i - 1] in ("--answer", "-a"):
            out.append("--answer-mode")
        out.append(arg)
    return out


def main() -> None:
    """The ``ragkit`` command: a simple ``query --json`` through a running server first (``fast.py``), then
    the full CLI."""
    sys.argv = answer_modes(sys.argv)
    code = try_query(sys.argv)
    if code is not None:
        sys.exit(code)
    from ragkit.cli.app import app  # typer, rich and the commands: only when the server did not answer

    app()
