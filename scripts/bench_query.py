#!/usr/bin/env python
"""Query latency: warm p50/p95 per strategy with a per-stage breakdown, one-shot processes, `ragkit --help`.

    python scripts/bench_query.py --index <index> [--queries ../shared/data/scifact-train/queries.jsonl]
        [--n 100] [--strategies naive,lexical,hybrid,auto,hippo,local,light,global,hierarchical]
        [--cold-index <index>] [--cold-runs 5] [--cold-query "…" ...] [--no-retry]

Warm: one process, the index opened once, every strategy run over the same queries (k = 10, features rerank
and passage assembly included) after one untimed query per strategy; stages are the medians of the timings
each query reports (planning, query encoding, dense search, BM25, fusion, the strategy's graph work,
reranking, assembly; "retry"/"expansion" when the corrective retry or the planner's expansions ran).
Cold: `ragkit query --json` as a fresh process on ``--cold-index`` (default ``--index``), median wall time and
peak RSS (``/usr/bin/time``) over ``--cold-runs`` runs, for each ``--cold-query`` (default: the first query of
the set) with the strategy the router chose for it, then ``--strategy lexical`` and ``ragkit --help``.
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

from benchlib import timed as run  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from ragkit.config import QueryConfig  # noqa: E402
from ragkit.evaluate import percentile  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_Q = ROOT.parent / "shared/data/scifact-train/queries.jsonl"
STAGES = [
    ("plan", ("plan",)),
    ("embed", ("embed_query",)),
    ("dense", ("dense",)),
    ("lexical", ("lexical",)),
    ("fusion", ("fusion",)),
    ("rerank", ("rerank", "cross_encoder")),
    ("assembly", ("assemble",)),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", type=Path, default=DEFAULT_Q)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--strategies", default="naive,lexical,hybrid,auto,hippo,local,light,global,hierarchical")
    ap.add_argument("--cold-index", help="index for the one-shot processes (default: --index)")
    ap.add_argument("--cold-runs", type=int, default=5)
    ap.add_argument("--no-retry", action="store_true", help="warm runs without the corrective retry")
    ap.add_argument(
        "--cold-query",
        action="append",
        help="question of the one-shot processes (repeatable; default: the first of --queries)",
    )
    args = ap.parse_args()
    queries = [json.loads(line)["text"] for line in args.queries.open() if line.strip()][: args.n]
    reader = api.open_index(args.index)
    reader.embedder.encode_query("warm up")
    tab = Table(
        title=f"warm query latency (ms), {len(queries)} queries, {args.index} ({reader.chunks.count():,} "
        "chunks); stage columns are medians"
    )
    for col in ("strategy", "p50", "p95", "p95/p50", *(s for s, _ in STAGES), "graph", "retry / expansion"):
        tab.add_column(col, justify="right")
    for name in args.strategies.split(","):
        cfg = QueryConfig(strategy=name, k=10, syntax=False, retry=not args.no_retry)
        api.query(reader, queries[0], cfg)  # the strategy's derived data (graphs, vectors) loads here
        lat, stages = [], []
        for q in queries:
            t = time.perf_counter()
            res = api.query(reader, q, cfg)
            lat.append((time.perf_counter() - t) * 1000)
            stages.append(res.timings_ms)
        med = {}
        for label, keys in STAGES:
            med[label] = statistics.median(sum(s.get(k, 0.0) for k in keys) for s in stages)
        known = {k for _, keys in STAGES for k in keys} | {"total", "load_model"}
        extra = [
            sum(v for k, v in s.items() if k not in known and not k.startswith(("retry", "expansion"))) for s in stages
        ]
        side = [sum(v for k, v in s.items() if k.startswith(("retry", "expansion"))) for s in stages]
        p50, p95 = percentile(lat, 0.5), percentile(lat, 0.95)
        tab.add_row(
            name,
            f"{p50:.1f}",
            f"{p95:.1f}",
            f"{p95 / p50:.2f}",
            *(f"{med[s]:.1f}" for s, _ in STAGES),
            f"{statistics.median(extra):.1f}",
            f"{sum(1 for x in side if x)} × {statistics.mean([x for x in side if x] or [0]):.0f}",
        )
    Console(width=160).print(tab)

    if args.cold_runs < 1:
        return
    exe = [sys.executable, "-m", "ragkit"]
    index = args.cold_index or args.index
    rows = []
    for q in args.cold_query or queries[:1]:
        routed = json.loads(
            subprocess.run(
                exe + ["query", "--json", "--index", index, q], capture_output=True, text=True, check=True
            ).stdout
        )["plan"]["strategy"]
        rows.append(
            (
                f"ragkit query --json {q[:40]!r} (auto → {routed})",
                [run(exe + ["query", "--json", "--index", index, q]) for _ in range(args.cold_runs)],
            )
        )
    q = (args.cold_query or queries)[0]
    rows.append(
        (
            "ragkit query --json --strategy lexical (same first query)",
            [
                run(exe + ["query", "--json", "--strategy", "lexical", "--index", index, q])
                for _ in range(args.cold_runs)
            ],
        )
    )
    rows.append(("ragkit --help", [run(exe + ["--help"]) for _ in range(args.cold_runs)]))
    t2 = Table(title=f"one-shot processes on {index} (median of {args.cold_runs})")
    for col in ("command", "wall s", "peak RSS MiB"):
        t2.add_column(col, justify="right" if col != "command" else "left")
    for label, runs in rows:
        t2.add_row(
            label, f"{statistics.median(w for w, _ in runs):.2f}", f"{statistics.median(m for _, m in runs):.0f}"
        )
    Console(width=160).print(t2)


if __name__ == "__main__":
    main()
