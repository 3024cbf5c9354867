#!/usr/bin/env python
"""How much a per-claim choice could gain on scifact-train, and how much a learned one does (cross-validated).

    python scripts/probe_scifact.py --index <index of ../shared/data/scifact-train's corpus> [--folds 5]

For every claim: nDCG@10 of each strategy ``auto`` may route to, and of ``hybrid`` at five dense weights; the
oracle rows take each claim's best. The learned row predicts each weight's nDCG@10 from twelve features of the
claim's dense and BM25 lists (top score, gap to the second and to the tenth, overlap of their top-10 documents,
the same first document, words, highest and mean IDF, share of words the index lacks) by ridge regression,
fitted on the other folds, and takes the weight it predicts best: the router choice "learned from the
labelled sets with cross-validation" of issue 18, measured before building it into ragkit.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from ragkit.config import QueryConfig  # noqa: E402
from ragkit.evaluate import documents_of, load_dataset, ndcg_at  # noqa: E402

STRATEGIES = ["hybrid", "naive", "lexical", "hippo", "light", "local", "hierarchical"]
ALPHAS = [0.2, 0.35, 0.5, 0.65, 0.8]


def features(reader, text: str, vocab: dict[str, int], chunks: int) -> list[float]:
    bare = dict(k=20, syntax=False, rerank="none", links=False, retry=False)
    dense, _, _ = api.retrieve(reader, text, QueryConfig(strategy="naive", **bare), limit=20)
    bm25, _, _ = api.retrieve(reader, text, QueryConfig(strategy="lexical", **bare), limit=20)
    d = [h.score for h in dense] + [0.0] * 20
    b = [h.score for h in bm25] + [0.0] * 20
    dd, bd = documents_of(dense, 10), documents_of(bm25, 10)
    words = re.findall(r"\w+", text.lower())
    idf = [math.log(chunks / (1 + vocab.get(w, 0))) for w in words] or [0.0]
    return [
        d[0],
        d[0] - d[1],
        d[0] - d[9],
        b[0],
        (b[0] - b[1]) / (b[0] or 1),
        (b[0] - b[9]) / (b[0] or 1),
        len(set(dd) & set(bd)) / 10,
        float(bool(dd and bd and dd[0] == bd[0])),
        len(words),
        max(idf),
        statistics.fmean(idf),
        sum(vocab.get(w, 0) == 0 for w in words) / max(1, len(words)),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True, type=Path)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "scifact-train")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    ds = load_dataset(args.data)
    reader = api.open_index(args.index)
    qids = sorted(ds.queries)

    def ndcg(qid: str, cfg: QueryConfig) -> float:
        hits, _, _ = api.retrieve(reader, ds.queries[qid], cfg, limit=40)
        return ndcg_at(documents_of(hits, 20), ds.qrels[qid])

    auto = np.array([ndcg(q, QueryConfig(k=20, syntax=False)) for q in qids])
    per_strategy = np.array([[ndcg(q, QueryConfig(strategy=s, k=20, syntax=False)) for s in STRATEGIES] for q in qids])
    per_alpha = np.array(
        [
            [ndcg(q, QueryConfig(strategy="hybrid", k=20, syntax=False, alpha=a, model_alpha=False)) for a in ALPHAS]
            for q in qids
        ]
    )
    vocab = reader.vocabulary()
    chunks = api.stats(reader)["chunks"]
    x = np.array([features(reader, ds.queries[q], vocab, chunks) for q in qids])
    x = np.hstack([(x - x.mean(0)) / (x.std(0) + 1e-9), np.ones((len(qids), 1))])
    fold = np.random.default_rng(0).permutation(len(qids)) % args.folds
    tab = Table(title=f"scifact-train, {len(qids)} claims, nDCG@10")
    tab.add_column("choice")
    tab.add_column("nDCG@10", justify="right")
    tab.add_row("auto (the rules)", f"{auto.mean():.4f}")
    for j, s in enumerate(STRATEGIES):
        tab.add_row(s, f"{per_strategy[:, j].mean():.4f}")
    for j, a in enumerate(ALPHAS):
        tab.add_row(f"hybrid, alpha {a}", f"{per_alpha[:, j].mean():.4f}")
    tab.add_row("oracle: each claim's best strategy", f"{per_strategy.max(1).mean():.4f}")
    tab.add_row("oracle: each claim's best alpha", f"{per_alpha.max(1).mean():.4f}")
    for lam in (1, 10, 100):
        pick = np.zeros(len(qids), dtype=int)
        for f in range(args.folds):
            train, test = fold != f, fold == f
            w = np.linalg.solve(x[train].T @ x[train] + lam * np.eye(x.shape[1]), x[train].T @ per_alpha[train])
            pick[test] = np.argmax(x[test] @ w, axis=1)
        tab.add_row(
            f"learned alpha per claim (ridge {lam}, {args.folds}-fold)",
            f"{per_alpha[np.arange(len(qids)), pick].mean():.4f}",
        )
    Console().print(tab)


if __name__ == "__main__":
    main()
