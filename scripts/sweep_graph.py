#!/usr/bin/env python
"""Query settings (strategies, graph and planner knobs) side by side on a labelled dataset (one index, one loaded model).

    python scripts/sweep_graph.py ../shared/data/hotpotqa-100 --index <index built by ragkit eval> \\
        "strategy=hybrid" "strategy=hippo" "strategy=hippo,vector_seeds=0" "strategy=hippo,passage_share=0.2"

Each argument is one row: comma-separated QueryConfig settings (strategy, vector_seeds, passage_share,
ppr_weight, damping, entity_weight, max_hops, alpha, rerank, tree_mode, expand …). Prints nDCG@10,
recall@2/5/10 and p50 latency.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from ragkit.config import QueryConfig  # noqa: E402
from ragkit.evaluate import documents_of, load_dataset, score_strategy  # noqa: E402
from ragkit.events import Reporter  # noqa: E402


def parse_row(spec: str, base: QueryConfig) -> QueryConfig:
    types = {f.name: f.type for f in fields(QueryConfig)}
    values = {}
    for item in spec.split(","):
        key, _, raw = item.partition("=")
        if key not in types:
            raise SystemExit(f"unknown setting {key!r}; known: {', '.join(sorted(types))}")
        kind = str(types[key])
        if kind == "bool":
            values[key] = raw.lower() in ("1", "true", "yes", "on")
        else:
            values[key] = int(raw) if kind == "int" else float(raw) if kind == "float" else raw
    return replace(base, **values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("rows", nargs="+")
    ap.add_argument("--index", required=True)
    ap.add_argument("--k", type=int, default=20)
    args = ap.parse_args()
    ds = load_dataset(args.dataset)
    reader = api.open_index(args.index)
    reader.embedder.encode_query("warm up")
    tab = Table(title=f"{args.dataset.name}: {len(ds.queries)} queries, k = {args.k}")
    for col in ("settings", "nDCG@10", "recall@2", "recall@5", "recall@10", "p50 ms"):
        tab.add_column(col, justify="left" if col == "settings" else "right")
    for spec in args.rows:
        cfg = parse_row(spec, QueryConfig(k=args.k, syntax=False))

        def search(text: str, cfg=cfg) -> list[str]:
            hits, _, _ = api.retrieve(reader, text, cfg, limit=2 * args.k)
            return documents_of(hits, args.k)

        r = score_strategy(spec, ds, search, Reporter())
        tab.add_row(
            spec,
            f"{r.metrics['ndcg@10']:.4f}",
            *(f"{r.metrics[f'recall@{n}']:.3f}" for n in (2, 5, 10)),
            f"{r.latency_ms['p50']:.0f}",
        )
    Console(width=120).print(tab)


if __name__ == "__main__":
    main()
