#!/usr/bin/env python
"""Spelling robustness: nDCG@10 on clean queries and on a copy with injected typos, correction on and off.

    python scripts/typo_eval.py ../shared/data/scifact-train --index <index built by ragkit eval> [--rate 0.3]

Typos: one random edit (delete, insert, substitute or swap adjacent letters) in ``--rate`` of the words of
four or more letters, with a fixed seed. The index is reused as it is (build it with ``ragkit eval`` first).
"""

from __future__ import annotations

import argparse
import random
import string
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from ragkit.config import QueryConfig  # noqa: E402
from ragkit.evaluate import documents_of, load_dataset, score_strategy  # noqa: E402
from ragkit.events import Reporter  # noqa: E402


def typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word))
    kind = rng.choice(["delete", "insert", "substitute", "swap"])
    if kind == "delete":
        return word[:i] + word[i + 1 :]
    if kind == "insert":
        return word[:i] + rng.choice(string.ascii_lowercase) + word[i:]
    if kind == "substitute":
        return word[:i] + rng.choice([c for c in string.ascii_lowercase if c != word[i].lower()]) + word[i + 1 :]
    i = min(i, len(word) - 2)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def with_typos(text: str, rate: float, rng: random.Random) -> str:
    return " ".join(typo(w, rng) if len(w) >= 4 and w.isalpha() and rng.random() < rate else w for w in text.split())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--index", required=True)
    ap.add_argument("--rate", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--strategy", default="hybrid")
    ap.add_argument("--k", type=int, default=100)
    args = ap.parse_args()
    ds = load_dataset(args.dataset)
    rng = random.Random(args.seed)
    noisy = replace(ds, queries={qid: with_typos(q, args.rate, rng) for qid, q in sorted(ds.queries.items())})
    changed = sum(noisy.queries[q] != ds.queries[q] for q in ds.queries)
    reader = api.open_index(args.index)
    reader.embedder.encode_query("warm up")
    tab = Table(
        title=f"{args.dataset.name}: {args.strategy}, typos in {args.rate:.0%} of words "
        f"({changed} of {len(ds.queries)} queries changed)"
    )
    for col in ("queries", "spelling correction", "nDCG@10", "recall@10", "p50 ms"):
        tab.add_column(col, justify="left" if col in ("queries", "spelling correction") else "right")
    for label, data in (("clean", ds), ("with typos", noisy)):
        for spelling in (False, True):
            cfg = QueryConfig(strategy=args.strategy, k=args.k, syntax=False, spelling=spelling)

            def search(text: str, cfg=cfg) -> list[str]:
                hits, _, _ = api.retrieve(reader, text, cfg, limit=2 * args.k)
                return documents_of(hits, args.k)

            r = score_strategy(label, data, search, Reporter())
            tab.add_row(
                label,
                "on" if spelling else "off",
                f"{r.metrics['ndcg@10']:.4f}",
                f"{r.metrics['recall@10']:.4f}",
                f"{r.latency_ms['p50']:.0f}",
            )
    Console(width=110).print(tab)


if __name__ == "__main__":
    main()
