"""The option names shared by the full CLI (``options.py``) and the fast path (``fast.py``), kept here without
typer so that the fast path stays light."""

INDEX = ("--index", "-i")
K = ("-k", "--top")
STRATEGY = ("--strategy", "-s")
FILTER = ("--filter", "-f")
JSON = "--json"
JSONL = "--jsonl"
