#!/usr/bin/env python
"""The retrieval-quality targets of issue 18, before and after a change, measured side by side in one run.

    python scripts/quality_targets.py [--before REF] [--work DIR] [--set hotpotqa,scifact,german,latency]

REF (a commit, default the last commit before issue 18's work) is checked out into a temporary git worktree;
each side (REF, then this working tree) runs in its own Python process, indexes the shared sets with the
default settings and the real bundled models and measures, with default query settings:

- hotpotqa-100 (all 100 questions; tuned on): recall@2 / recall@5 of ``auto`` and ``hybrid``, and of ``auto``
  on each half (odd / even question numbers) to show how much one half moves;
- scifact-train (all claims; tuned on): nDCG@10 of ``auto`` and ``hybrid``, and ``auto`` per half;
- German questions, strategy auto, k 3: top-1 / top-3 share on the labelled set (tests/data/german_questions.jsonl,
  tuned on) and on the held-out set (tests/data/german_questions_heldout.jsonl, written without looking at results
  and never tuned on);
- warm query latency p50 (ms) of hybrid, auto and hippo over the hotpotqa questions (second pass);
- each index's size (``ragkit stats``) and build time (fresh index; each side's models already converted and
  exported in the cache, so no one-time export is timed).

The question files always come from this working tree, so both sides answer the same questions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"
DEFAULT_BEFORE = "ac34d29"  # main before issue 18 (README: "Retrieval quality")
TARGETS = {
    "hotpotqa auto recall@2": 0.75,
    "hotpotqa auto recall@5": 0.92,
    "scifact auto nDCG@10": 0.75,
    "German top-1": 0.7,
    "German top-3": 0.9,  # at least
    "warm latency p50 hybrid (ms)": -15,
    "warm latency p50 auto (ms)": -30,  # negative: at most (the
    "warm latency p50 hippo (ms)": -40,
}  # fast-path budgets, README "Query latency")


def measure(repo: Path, work: Path, sets: set[str]) -> dict[str, float]:
    """One side's figures (runs inside that side's process, ``repo`` first on sys.path)."""
    sys.path.insert(0, str(repo))
    from ragkit import api
    from ragkit.config import QueryConfig
    from ragkit.evaluate import documents_of, load_dataset, ndcg_at, recall_at

    out: dict[str, float] = {}

    def ranked(reader, text: str, strategy: str, k: int) -> list[str]:
        hits, _, _ = api.retrieve(reader, text, QueryConfig(strategy=strategy, k=k, syntax=False), limit=2 * k)
        return documents_of(hits, k)

    def indexed(source: Path, name: str):
        """Index ``source`` into work/name (a fresh index) and record its size and time."""
        summary = api.index([source], work / name, full=True)
        reader = api.open_index(work / name)
        out[f"{name} index size (MB)"] = api.stats(reader)["size_bytes"] / 1e6
        out[f"{name} index time (s)"] = summary.seconds["total"]
        return reader

    def beir(name: str, metric: str, strategies: list[str]):
        ds = load_dataset(SHARED / name)
        reader = indexed(ds.corpus, name)
        reader.embedder.encode_query("warm up")
        qids = sorted(ds.queries)
        for strategy in strategies:
            per = {}
            for qid in qids:
                docs = ranked(reader, ds.queries[qid], strategy, 20)
                if metric == "nDCG@10":
                    per[qid] = {"nDCG@10": ndcg_at(docs, ds.qrels[qid])}
                else:
                    per[qid] = {f"recall@{k}": recall_at(docs, ds.qrels[qid], k) for k in (2, 5)}
            for m in per[qids[0]]:
                out[f"{name.split('-')[0]} {strategy} {m}"] = statistics.fmean(p[m] for p in per.values())
                if strategy == "auto":
                    for half, part in (("odd", qids[0::2]), ("even", qids[1::2])):
                        out[f"{name.split('-')[0]} auto {m} ({half} half)"] = statistics.fmean(per[q][m] for q in part)
        return reader, ds

    if "hotpotqa" in sets or "latency" in sets:
        reader, ds = beir("hotpotqa-100", "recall", ["auto", "hybrid"])
        if "latency" in sets:
            for strategy in ("hybrid", "auto", "hippo"):
                cfg = QueryConfig(strategy=strategy, k=5)
                times = []
                for _ in range(2):
                    times = []
                    for text in ds.queries.values():
                        t = time.perf_counter()
                        api.query(reader, text, cfg)
                        times.append((time.perf_counter() - t) * 1000)
                out[f"warm latency p50 {strategy} (ms)"] = statistics.median(times)
    if "scifact" in sets:
        beir("scifact-train", "nDCG@10", ["auto", "hybrid"])
    if "german" in sets:
        reader = indexed(SHARED / "german-laws" / "laws", "german-laws")
        for label, path in (("", "german_questions.jsonl"), (" held-out", "german_questions_heldout.jsonl")):
            questions = [
                json.loads(line) for line in (REPO / "tests" / "data" / path).read_text().splitlines() if line.strip()
            ]
            ranks = []
            for q in questions:
                passages = api.query(reader, q["query"], QueryConfig(k=3)).passages
                expected = q["section"] if isinstance(q["section"], list) else [q["section"]]
                ranks.append(
                    next(
                        (p.rank for p in passages if p.section.split(" > ")[-1] in expected and q["law"] in p.path),
                        None,
                    )
                )
            out[f"German{label} top-1"] = sum(r == 1 for r in ranks) / len(ranks)
            out[f"German{label} top-3"] = sum(r is not None for r in ranks) / len(ranks)
    return out


def side(repo: Path, work: Path, sets: str) -> dict[str, float]:
    """Run ``measure`` for ``repo`` in a fresh process (its own imports) and return its figures."""
    res = subprocess.run(
        [sys.executable, __file__, "--measure", str(repo), "--work", str(work), "--set", sets],
        capture_output=True,
        text=True,
    )
    if res.returncode:
        sys.exit(f"measuring {repo} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default=DEFAULT_BEFORE, help="the commit to compare with")
    ap.add_argument("--work", type=Path, help="folder for worktree and indexes (default: a temporary folder)")
    ap.add_argument("--set", default="hotpotqa,scifact,german,latency")
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # internal: one side, JSON on stdout
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.work, set(args.set.split(",")))))
        return

    from rich.console import Console
    from rich.table import Table

    work = args.work or Path(tempfile.mkdtemp(prefix="ragkit-targets-"))

    def commit(repo: Path, ref: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), "rev-parse", f"{ref}^{{commit}}"], capture_output=True, text=True
        ).stdout.strip()

    tree = work / "before-tree"
    created = not tree.exists()
    if created:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), args.before],
            check=True,
            capture_output=True,
        )
    elif commit(tree, "HEAD") != commit(REPO, args.before):
        sys.exit(f"{tree} exists and is not at {args.before}: remove it or choose another --work")
    try:
        t = time.perf_counter()
        before = side(tree, work / "before", args.set)
        after = side(REPO, work / "after", args.set)
    finally:
        if created:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], capture_output=True)
    tab = Table(
        title=f"retrieval quality, before ({args.before}) and after (this tree), one run "
        f"({time.perf_counter() - t:.0f} s)"
    )
    for col in ("figure", "before", "after", "target"):
        tab.add_column(col, justify="left" if col == "figure" else "right")
    for name in after:
        target = TARGETS.get(name)
        b = before.get(name)
        met = target is not None and (after[name] >= target if target > 0 else after[name] <= -target)
        tab.add_row(
            name,
            "" if b is None else f"{b:.4f}",
            f"{after[name]:.4f}",
            "" if target is None else f"{'≥' if target > 0 else '≤'} {abs(target)}" + (" ✓" if met else " ✗"),
        )
    Console().print(tab)


if __name__ == "__main__":
    main()
