#!/usr/bin/env python
"""Build the router's labelled set and measure its accuracy.

    python scripts/label_router.py --out tests/data/router_labels.jsonl \\
        ../shared/data/scifact-train=<scifact index> ../shared/data/hotpotqa-100=<hotpot index> \\
        tests/data/rust-book-queries=<index of ../shared/data/rust-book> [--n 40]

For the first N queries of each dataset (BEIR indexes built by ``ragkit eval``; a folder with only
queries.jsonl and qrels is judged against the index given for it), every routable strategy is
run and scored by nDCG@10; a query's label is the set of strategies that reach the best score (ties are
common: several strategies often rank the gold document first). The router is right when its choice is
in that set. Each record also keeps what the router saw (the plan's identifiers and the query's entities
the index knows), so tests can re-run the rules without the index.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from ragkit.config import QueryConfig  # noqa: E402
from ragkit.evaluate import documents_of, load_dataset, ndcg_at  # noqa: E402
from ragkit.retrieve.router import plan_and_route  # noqa: E402

CANDIDATES = ["naive", "lexical", "hybrid", "hippo", "global", "hierarchical"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pairs", nargs="+", help="DATASET=INDEX")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n", type=int, default=40)
    args = ap.parse_args()
    records = []
    tab = Table(title="router accuracy (choice among the best-scoring strategies, nDCG@10)")
    for col in ("dataset", "queries", "accuracy", "always hybrid", "routed"):
        tab.add_column(col, justify="left" if col in ("dataset", "routed") else "right")
    for pair in args.pairs:
        dataset, index = pair.split("=", 1)
        ds = load_dataset(Path(dataset), corpus_required=False)
        reader = api.open_index(index)
        facts = reader.facts()
        qids = sorted(ds.queries)[: args.n]
        right = hybrid_right = 0
        routed: dict[str, int] = {}
        for qid in qids:
            text = ds.queries[qid]
            scores = {}
            for name in CANDIDATES:
                cfg = QueryConfig(strategy=name, k=10, syntax=False, retry=False)
                hits, _, _ = api.retrieve(reader, text, cfg, limit=20)
                scores[name] = round(ndcg_at(documents_of(hits, 10), ds.qrels[qid]), 4)
            top = max(scores.values())
            best = sorted(n for n, v in scores.items() if v == top)
            plan, cfg = plan_and_route(reader, text, QueryConfig(syntax=False))
            right += plan.strategy in best
            hybrid_right += "hybrid" in best
            routed[plan.strategy] = routed.get(plan.strategy, 0) + 1
            records.append(
                {
                    "dataset": Path(dataset).name,
                    "query_id": qid,
                    "query": text,
                    "planned": plan.text,
                    "scores": scores,
                    "best": best,
                    "routed": plan.strategy,
                    "reason": plan.reason,
                    "identifiers": plan.identifiers,
                    "known_entities": plan.entities,
                    "has_communities": facts["communities"] > 0,
                    "has_tree": facts["tree"] > 0,
                }
            )
        tab.add_row(
            Path(dataset).name,
            str(len(qids)),
            f"{right / len(qids):.3f}",
            f"{hybrid_right / len(qids):.3f}",
            ", ".join(f"{k} {v}" for k, v in sorted(routed.items())),
        )
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    Console(width=120).print(tab)


if __name__ == "__main__":
    main()
