#!/usr/bin/env python
"""Query latency: warm p50/p95 per strategy, a cold `ragkit query` process, `ragkit --help`.

    python scripts/bench_query.py --index indexes/eval-scifact-train \
        [--queries ../shared/data/scifact-train/queries.jsonl] [--n 200]

Build the index first (``ragkit eval ../shared/data/scifact-train`` does).
"""

from __future__ import annotations

import argparse
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
from ragkit.config import QueryConfig  # noqa: E402
from ragkit.evaluate import percentile  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_Q = ROOT.parent / "shared/data/scifact-train/queries.jsonl"


def wall(cmd: list[str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", default="indexes/eval-scifact-train")
    ap.add_argument("--queries", type=Path, default=DEFAULT_Q)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--strategies", default="naive,lexical,hybrid")
    args = ap.parse_args()
    queries = [json.loads(line)["text"] for line in args.queries.open() if line.strip()][: args.n]
    reader = api.open_index(args.index)
    reader.embedder.encode_query("warm up")
    tab = Table(title=f"warm query latency, {len(queries)} queries, index {args.index} "
                      f"({reader.chunks.count()} chunks)")
    for col in ("strategy", "p50 ms", "p95 ms", "mean ms"):
        tab.add_column(col, justify="right")
    for name in args.strategies.split(","):
        cfg = QueryConfig(strategy=name, k=10, syntax=False)
        lat = []
        for q in queries:
            t = time.perf_counter()
            api.query(reader, q, cfg)
            lat.append((time.perf_counter() - t) * 1000)
        tab.add_row(name, f"{percentile(lat, .5):.1f}", f"{percentile(lat, .95):.1f}", f"{statistics.fmean(lat):.1f}")
    Console(width=100).print(tab)

    exe = [sys.executable, "-m", "ragkit"]
    cold = wall(exe + ["query", "--json", "--index", args.index, queries[0]], 3)
    cold_lex = wall(exe + ["query", "--json", "--strategy", "lexical", "--index", args.index, queries[0]], 3)
    helps = wall(exe + ["--help"], 5)
    t2 = Table(title="process wall times (median)")
    t2.add_column("command")
    t2.add_column("seconds", justify="right")
    t2.add_row("ragkit query (cold process, one hybrid query)", f"{statistics.median(cold):.2f}")
    t2.add_row("ragkit query --strategy lexical (cold, no model load)", f"{statistics.median(cold_lex):.2f}")
    t2.add_row("ragkit --help", f"{statistics.median(helps):.3f}")
    Console(width=100).print(t2)


if __name__ == "__main__":
    main()
