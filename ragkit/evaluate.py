"""BEIR-layout evaluation: the dataset, nDCG@10, recall@k, MRR@10 and latency per strategy (``measure.evaluate``
indexes the corpus and runs the queries through these). ``ndcg_at`` is ragkit's one nDCG: ``ragkit eval`` reads it
with linear gain, ``ragkit learn``'s guard with exponential gain (``GAINS``)."""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ragkit.errors import BadDataset
from ragkit.events import Reporter

RECALL_AT = (2, 5, 10, 100)


@dataclass
class Dataset:
    root: Path
    corpus: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_dataset(root: Path, split: str = "test", corpus_required: bool = True) -> Dataset:
    """A BEIR folder; ``corpus_required`` False accepts queries and qrels alone (judged against an index)."""
    corpus, qpath, rpath = root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / f"{split}.tsv"
    for p in (corpus, qpath, rpath) if corpus_required else (qpath, rpath):
        if not p.is_file():
            raise BadDataset(f"{root} is not a BEIR dataset: {p.relative_to(root)} is missing")
    qrels: dict[str, dict[str, int]] = {}
    with rpath.open() as fh:
        for n, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if n == 0 and not parts[-1].lstrip("-").isdigit():
                continue  # header
            if len(parts) < 3:
                continue
            qid, did, score = parts[0], parts[1], int(parts[2])
            if score > 0:
                qrels.setdefault(qid, {})[did] = score
    queries = {}
    with qpath.open() as fh:
        for line in fh:
            if line.strip():
                obj = json.loads(line)
                if str(obj["_id"]) in qrels:
                    queries[str(obj["_id"])] = str(obj["text"])
    if not queries:
        raise BadDataset(f"{root}: no query in queries.jsonl has judgements in qrels/{split}.tsv")
    return Dataset(root, corpus, queries, qrels)


GAINS = {  # what a grade is worth in nDCG
    # the grade itself: trec_eval's ndcg_cut ("gain values are the relevance values in the qrels file"), so
    # pytrec_eval's and BEIR's; what ``ragkit eval`` reports
    "linear": lambda grade: grade,
    # 2^grade - 1 (Burges et al. 2005): the gain LightGBM's LambdaRank optimises by default, with which ``ragkit
    # learn``'s guard measures its graded labels (ragkit/learn/ranker.py)
    "exponential": lambda grade: 2.0**grade - 1,
}


def ndcg_at(
    ranked: Sequence[Hashable],
    rels: Mapping[Hashable, int],
    k: int = 10,
    gain: Literal["linear", "exponential"] = "linear",
) -> float:
    """nDCG@k of ``ranked`` (ids, best first) against the grades ``rels`` (id → grade; an id not in it: 0), the
    ideal being every graded id by its grade; ``gain``: a grade's worth (``GAINS``). With grades of 0 and 1 alone
    (binary judgements, as SciFact's qrels) the two gains give the same figure."""
    worth = GAINS[gain]
    dcg = sum(worth(rels.get(d, 0)) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum(worth(r) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], rels: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & rels.keys()) / len(rels) if rels else 0.0


def mrr_at(ranked: list[str], rels: dict[str, int], k: int = 10) -> float:
    for i, d in enumerate(ranked[:k]):
        if d in rels:
            return 1.0 / (i + 1)
    return 0.0


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


@dataclass
class StrategyScore:
    strategy: str
    metrics: dict[str, float] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)


def score_strategy(
    name: str,
    ds: Dataset,
    search: Callable[[str], list[str]],
    reporter: Reporter,
    limit: int | None = None,
) -> StrategyScore:
    per: dict[str, list[float]] = {m: [] for m in ["ndcg@10", *(f"recall@{k}" for k in RECALL_AT), "mrr@10"]}
    lat = []
    qids = sorted(ds.queries)[:limit] if limit else sorted(ds.queries)
    reporter.start(f"eval {name}", len(qids))
    for qid in qids:
        t = time.perf_counter()
        ranked = search(ds.queries[qid])
        lat.append((time.perf_counter() - t) * 1000)
        rels = ds.qrels[qid]
        per["ndcg@10"].append(ndcg_at(ranked, rels))
        for k in RECALL_AT:
            per[f"recall@{k}"].append(recall_at(ranked, rels, k))
        per["mrr@10"].append(mrr_at(ranked, rels))
        reporter.advance(f"eval {name}")
    reporter.finish(f"eval {name}")
    return StrategyScore(
        strategy=name,
        metrics={m: round(statistics.fmean(v), 4) for m, v in per.items()},
        latency_ms={"p50": round(percentile(lat, 0.5), 2), "p95": round(percentile(lat, 0.95), 2)},
    )


def documents_of(hits, k: int) -> list[str]:
    """Document ranking from chunk hits: a document ranks where its best chunk does."""
    seen: dict[str, None] = {}
    for h in hits:
        seen.setdefault(h.external_id, None)
        if len(seen) >= k:
            break
    return list(seen)
