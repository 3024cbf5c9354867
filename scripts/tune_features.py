#!/usr/bin/env python
"""Tune the structure-feature weights of a mode on a BEIR train set (coordinate ascent on nDCG@10).

    python scripts/tune_features.py ../shared/data/scifact-train --index DIR [--mode balanced] [--strategy hybrid]

Candidates and their features are computed once per query; each weight setting
only re-scores them, so a sweep costs one retrieval pass. Prints the table of
every step and the best weights (copy them into DEFAULT_WEIGHTS or ragkit.toml).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from ragkit.config import QueryConfig  # noqa: E402
from ragkit.evaluate import load_dataset, ndcg_at  # noqa: E402
from ragkit.rerank.features import DEFAULT_WEIGHTS, FEATURES, FeatureContext, compute  # noqa: E402

GRID = [0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--index", required=True)
    ap.add_argument("--mode", default="balanced")
    ap.add_argument("--strategy", default="hybrid")
    ap.add_argument("--k", type=int, default=100)
    args = ap.parse_args()
    ds = load_dataset(args.dataset)
    reader = api.open_index(args.index)
    cfg = QueryConfig(strategy=args.strategy, syntax=False, rerank="none")
    cached = []
    for qid, text in ds.queries.items():
        hits, plan, _ = api.retrieve(reader, text, cfg, limit=2 * args.k)
        feats = compute(hits, FeatureContext(text, reader.graph, doc_types=set(plan["doc_type_routing"])))
        cached.append((qid, [(h.external_id, feats[h.chunk_id]) for h in hits]))

    def score(weights: dict[str, float]) -> float:
        out = []
        for qid, cands in cached:
            ranked = sorted(cands, key=lambda c: -sum(weights[f] * v for f, v in c[1].items()))
            docs: dict[str, None] = {}
            for ext, _ in ranked:
                docs.setdefault(ext, None)
            out.append(ndcg_at(list(docs), ds.qrels[qid]))
        return statistics.fmean(out)

    weights = dict(DEFAULT_WEIGHTS[args.mode])
    tab = Table(title=f"feature weights, mode {args.mode}, {args.strategy} on {args.dataset.name}")
    for col in ("step", "feature", "weight", "nDCG@10"):
        tab.add_column(col, justify="right")
    only_text = {f: (1.0 if f == "text_relevance" else 0.0) for f in FEATURES}
    tab.add_row("-", "text_relevance only", "", f"{score(only_text):.4f}")
    best = score(weights)
    tab.add_row("0", "defaults", "", f"{best:.4f}")
    step = 0
    for _ in range(2):
        for f in FEATURES:
            if f in ("text_relevance", "reference_match", "is_latest", "doc_type_match"):
                continue  # anchors, or constant on a flat BEIR corpus
            for w in GRID:
                trial = {**weights, f: w}
                s = score(trial)
                if s > best + 1e-4:
                    best, weights = s, trial
                    step += 1
                    tab.add_row(str(step), f, f"{w:.2f}", f"{best:.4f}")
    Console(width=100).print(tab)
    Console(width=100).print({f: weights[f] for f in FEATURES})


if __name__ == "__main__":
    main()
