#!/usr/bin/env python
"""Sweep the hybrid fusion weight (alpha) on a BEIR dataset, for convex and weighted RRF fusion, retrieving once.

    python scripts/tune_fusion.py ../shared/data/scifact-train [--index DIR] [--alphas 0.3,0.4,0.5,0.6,0.7]

The dense and BM25 lists of every query are fetched once (each retriever's own list: no reranking, links or
retry); each alpha then only re-fuses them, so the sweep costs one retrieval pass. A second table runs hybrid
as queries do (reranking, links, retry) with each fusion at the default alpha. Tune on train splits only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from ragkit.config import QueryConfig  # noqa: E402
from ragkit.evaluate import documents_of, load_dataset, ndcg_at, recall_at  # noqa: E402
from ragkit.retrieve.fusion import convex, weighted_rrf  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--index", default=None)
    ap.add_argument("--alphas", default="0.2,0.3,0.4,0.5,0.6,0.7,0.8")
    ap.add_argument("--k", type=int, default=100)
    args = ap.parse_args()
    ds = load_dataset(args.dataset)
    index_dir = args.index or api.DEFAULT_HOME / f"eval-{args.dataset.resolve().name}"
    api.index([ds.corpus], index_dir)
    reader = api.open_index(index_dir)
    lists = {}
    plain = QueryConfig(syntax=False, links=False, rerank="none", retry=False)  # each retriever's own list
    for qid, text in ds.queries.items():
        dense, _, _ = api.retrieve(reader, text, replace(plain, strategy="naive"), limit=4 * 2 * args.k)
        lex, _, _ = api.retrieve(reader, text, replace(plain, strategy="lexical"), limit=4 * 2 * args.k)
        lists[qid] = (dense, lex, reader.embedder.encode_query(text))
    tab = Table(title=f"fusion of dense and BM25 on {args.dataset.name}, {len(lists)} queries (no rerank, no links)")
    for col in ("fusion", "alpha (dense weight)", "nDCG@10", "recall@10", "recall@100"):
        tab.add_column(col, justify="right")
    fusions = {
        "convex": lambda d, b, a, q: convex(d, b, a, q),
        "weighted RRF": lambda d, b, a, q: weighted_rrf({"dense": d, "lexical": b}, {"dense": a, "lexical": 1 - a}),
    }
    for method, fuse in fusions.items():
        for alpha in [float(a) for a in args.alphas.split(",")]:
            nd, r10, r100 = [], [], []
            for qid, (dense, lex, qvec) in lists.items():
                ranked = documents_of(fuse(dense, lex, alpha, qvec)[: 2 * args.k], args.k)
                nd.append(ndcg_at(ranked, ds.qrels[qid]))
                r10.append(recall_at(ranked, ds.qrels[qid], 10))
                r100.append(recall_at(ranked, ds.qrels[qid], 100))
            tab.add_row(
                method,
                f"{alpha:.2f}",
                f"{statistics.fmean(nd):.4f}",
                f"{statistics.fmean(r10):.4f}",
                f"{statistics.fmean(r100):.4f}",
            )
    Console().print(tab)
    # the same two fusions as queries run them: hybrid with the default fetch, reranking, links and retry
    tab = Table(title=f"hybrid with the default settings on {args.dataset.name}, by fusion")
    for col in ("fusion", "nDCG@10", "recall@10"):
        tab.add_column(col, justify="right")
    for method in ("convex", "rrf"):
        nd, r10 = [], []
        for qid, text in ds.queries.items():
            hits, _, _ = api.retrieve(
                reader, text, QueryConfig(strategy="hybrid", fusion=method, syntax=False), limit=2 * args.k
            )
            ranked = documents_of(hits, args.k)
            nd.append(ndcg_at(ranked, ds.qrels[qid]))
            r10.append(recall_at(ranked, ds.qrels[qid], 10))
        tab.add_row(method, f"{statistics.fmean(nd):.4f}", f"{statistics.fmean(r10):.4f}")
    Console().print(tab)


if __name__ == "__main__":
    main()
