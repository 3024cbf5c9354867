#!/usr/bin/env python
"""Warm queries in one process (as in the interactive session) vs. cold one-shot `ragkit query` processes.

    python scripts/bench_session.py --index <index> [--queries Q.jsonl] [--n 30] [--cold 3]

Runs ``--cold`` one-shot ``ragkit query`` processes (model load included) and, in this process, a
session (ragkit.cli.session.Session) that answers the first N queries; prints the median cold wall
time, the session's first (loading) query, its warm p50/p95 and the cold/warm ratio.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from ragkit.cli.session import Session  # noqa: E402
from ragkit.config import QueryConfig  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", type=Path, default=None)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--cold", type=int, default=3)
    args = ap.parse_args()
    texts = ["how is overtime limited?"] * args.n
    if args.queries:
        with args.queries.open() as fh:
            texts = [json.loads(line)["text"] for line in fh if line.strip()][: args.n]
    cold = []
    for text in texts[: args.cold]:
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "ragkit", "query", text, "--index", args.index, "--strategy", "hybrid", "--json"],
            check=True,
            capture_output=True,
        )
        cold.append(time.perf_counter() - t)
    session = Session(api.open_index(args.index), QueryConfig(strategy="hybrid"), Console(file=io.StringIO()))
    times = []
    for text in texts:
        t = time.perf_counter()
        session.ask(text)
        times.append(time.perf_counter() - t)
    warm = sorted(times[1:])
    p50, p95 = statistics.median(warm), warm[int(0.95 * (len(warm) - 1))]
    tab = Table(title=f"{args.index}: one-shot processes vs. a session (hybrid, passages rendered)")
    for col in ("", "seconds"):
        tab.add_column(col, justify="left" if not col else "right")
    tab.add_row(f"cold `ragkit query` process (median of {len(cold)})", f"{statistics.median(cold):.2f}")
    tab.add_row("session: first query (loads the embedder)", f"{times[0]:.2f}")
    tab.add_row(f"session: warm p50 / p95 ({len(warm)} queries)", f"{p50:.3f} / {p95:.3f}")
    tab.add_row("cold / warm p50", f"{statistics.median(cold) / p50:.0f}×")
    Console(width=120).print(tab)


if __name__ == "__main__":
    main()
