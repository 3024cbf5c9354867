#!/usr/bin/env python
"""ragkit's own reranker measured (issue 51): retrieval with and without it in one run, on held-out questions, and
the guard that decides in which languages plain queries use it by default.

    python scripts/bench_reranker.py retrieval [--work DIR]   # one table: before (features) / after (reranker)
    python scripts/bench_reranker.py guard [--work DIR]       # the rule below, written into the model's card

The guard's rule, written before it was first run: for each language, its held-out questions (German: the German
answer set's held-out half, 103 questions with their section; Swedish: the Swedish answer set's held-out half,
112 with their page or paragraph; English: hotpotqa-100's held-out half, 50, and SciFact-train's held-out half,
404 claims) are asked with the structure features alone and with the reranker on the same index. Plain queries in
that language rerank by default only when (1) the per-question figure (German and Swedish: the right passage
first; English: nDCG@10) is higher with the reranker by more than chance, a paired bootstrap over the questions
giving p < 0.05 (ragkit/learn/guard.py), and (2) the reranker adds at most 150 ms at the median over those
queries. ``--answer``, the session and the search page use it whatever the guard says.

After the first run (the reranker lost in every language, below) the same verdict governs ``--answer``, the
session and the page too: their passages are reordered only where plain queries' are. The answer scorer does not
read the reranker's unit scores: fitted with them it gained little on the fit halves and cost ~0.4 s an answer
(scripts/README.md).

Every subcommand takes ``--json``.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import harness
import numpy as np
from harness import arg, print_table

from ragkit import measure
from ragkit.config import QueryConfig
from ragkit.learn import guard
from ragkit.rerank import bundled

cli = harness.CLI(__doc__)
quality = harness.tests_module("quality")
sets = harness.tests_module("answer_sets")
WORK = arg("--work", type=Path, default=Path("/tmp/ragkit-bench-reranker"), help="indexes and corpora")
BUDGET_MS = 150.0
BEFORE = QueryConfig(k=10, rerank="features", log=False)
AFTER = replace(BEFORE, rerank="cross")


def _indexed(name: str, work: Path):
    aset = sets.load(name, work / "corpora")
    ix, _ = harness.indexed(aset.source, work / "indexes" / name)
    return aset, ix


def _held(aset) -> list[dict]:
    return aset.half("held_out")[0]


def _section_first(ix, q: dict, cfg: QueryConfig) -> tuple[int | None, float]:
    """The rank (within 3) of the first passage in the question's labelled section of its law, and the ms the
    reranker took."""
    result = ix.query(q["query"], replace(cfg, k=3))
    expected = q["section"] if isinstance(q["section"], list) else [q["section"]]
    for p in result.passages:
        if p.section.split(" > ")[-1] in expected and quality._in_law(p.path, q["law"]):
            return p.rank, result.timings_ms.get("cross_encoder", 0.0)
    return None, result.timings_ms.get("cross_encoder", 0.0)


def _page_first(ix, q: dict, cfg: QueryConfig) -> tuple[int | None, float]:
    result = ix.query(q["query"], replace(cfg, k=3))
    for p in result.passages:
        if not p.path.endswith(q["doc"]):
            continue
        if q.get("kind") == "reference" and quality.is_cited_section(p, q["ref"]):
            return p.rank, result.timings_ms.get("cross_encoder", 0.0)
        first, last = q["pages"]
        if q.get("kind") != "reference" and p.pages and p.pages[0] <= last and p.pages[1] >= first:
            return p.rank, result.timings_ms.get("cross_encoder", 0.0)
    return None, result.timings_ms.get("cross_encoder", 0.0)


def _ranks(ix, questions: list[dict], rank) -> dict:
    """Each question asked before (features) and after (the reranker): its rank, and the reranker's ms."""
    ix.query("warm up", AFTER)
    out = {"before": [], "after": [], "ms": []}
    for q in questions:
        out["before"].append(rank(ix, q, BEFORE)[0])
        r, ms = rank(ix, q, AFTER)
        out["after"].append(r)
        out["ms"].append(ms)
    return out


def _row(label: str, ranks: dict) -> tuple:
    def top(rs, k):
        return sum(r is not None and r <= k for r in rs) / len(rs)

    told, p = guard.better([float(r == 1) for r in ranks["before"]], [float(r == 1) for r in ranks["after"]])
    ms = sorted(ranks["ms"])
    return (
        label,
        len(ranks["before"]),
        f"{top(ranks['before'], 1):.3f} / {top(ranks['before'], 3):.3f}",
        f"{top(ranks['after'], 1):.3f} / {top(ranks['after'], 3):.3f}",
        f"{p:.3f}",
        f"{statistics.median(ms):.0f} / {ms[int(0.95 * (len(ms) - 1))]:.0f}",
    )


def german(work: Path) -> list[tuple]:
    aset, ix = _indexed("german", work)
    rows = [_row("German answer set, held-out half", _ranks(ix, _held(aset), _section_first))]
    rows.append(_row("German gate set (36)", _ranks(ix, quality.german_questions(), _section_first)))
    rows.append(_row("German gate set, held out (32)", _ranks(ix, quality.german_questions(True), _section_first)))
    return rows


def swedish(work: Path) -> list[tuple]:
    aset, ix = _indexed("swedish", work)
    rows = [_row("Swedish answer set, held-out half", _ranks(ix, _held(aset), _page_first))]
    for kind in ("everyday", "reference"):
        rows.append(_row(f"Swedish gate set, {kind}", _ranks(ix, quality.swedish_questions(kind), _page_first)))
    return rows


def english(work: Path) -> list[tuple]:
    """hotpotqa-100 and SciFact-train through ``ragkit eval`` (nDCG@10, recall@5), features vs the reranker."""
    rows = []
    for name in ("hotpotqa-100", "scifact-train"):
        ds = harness.SHARED / name
        found = measure.evaluate(ds, ["auto"], k=20, reranks=["features", "cross"])
        by = {r["rerank"]: r for r in found["results"]}
        rows.append(
            (
                f"{name} (all queries)",
                by["features"].get("queries", ""),
                f"nDCG@10 {by['features']['ndcg@10']:.3f} · R@5 {by['features']['recall@5']:.3f}",
                f"nDCG@10 {by['cross']['ndcg@10']:.3f} · R@5 {by['cross']['recall@5']:.3f}",
                "–",
                f"p50 {by['cross']['p50_ms'] - by['features']['p50_ms']:+.0f} ms",
            )
        )
    return rows


COLS = ("questions", "n", "before: top-1 / top-3", "after: top-1 / top-3", "p (top-1)", "reranker ms p50 / p95")


@cli.command("retrieval", WORK, arg("--set", dest="which", default="german,swedish,english"))
def retrieval(args) -> None:
    """Before (the structure features) and after (the reranker on the first 10 hits), the same index, one run."""
    rows = []
    for name in args.which.split(","):
        rows += {"german": german, "swedish": swedish, "english": english}[name](args.work)
    print_table(f"retrieval with and without {bundled.NAME}", COLS, rows, width=180)


def _english_held_out(work: Path) -> tuple[list[float], list[float], list[float]]:
    """nDCG@10 per held-out hotpotqa and SciFact question (documents ranked where their best chunk is, as
    ``ragkit eval`` ranks them), features vs the reranker, and the reranker's ms."""
    from ragkit.evaluate import documents_of, load_dataset, ndcg_at

    before, after, ms = [], [], []
    for name, folder in (("hotpotqa", harness.SHARED / "hotpotqa-100"), ("scifact", harness.SHARED / "scifact-train")):
        aset = sets.scifact() if name == "scifact" else sets.load(name, work / "corpora")
        ds = load_dataset(folder)
        ix, _ = harness.indexed(folder, work / "indexes" / name)
        ix.query("warm up", AFTER)
        for q in _held(aset):
            for cfg, out in ((replace(BEFORE, k=20), before), (replace(AFTER, k=20), after)):
                result = ix.query(q["query"], cfg)
                out.append(ndcg_at(documents_of(result.hits, 20), ds.qrels.get(q["id"], {}), 10))
            ms.append(result.timings_ms.get("cross_encoder", 0.0))
    return before, after, ms


@cli.command("guard", WORK)
def guard_cmd(args) -> None:
    """The rule of the module's docstring, per language; writes ``on_by_default`` and the figures into the
    shipped model's card (ragkit/rerank/reranker/card.json)."""
    decided, rows = [], []
    checks = {
        "de": lambda: _ranks(*_pair("german", args.work), _section_first),
        "sv": lambda: _ranks(*_pair("swedish", args.work), _page_first),
    }
    for lang, ranked in checks.items():
        ranks = ranked()
        b, a = [float(r == 1) for r in ranks["before"]], [float(r == 1) for r in ranks["after"]]
        rows.append(_decide(lang, "right passage first", b, a, ranks["ms"], decided))
    b, a, ms = _english_held_out(args.work)
    rows.append(_decide("en", "nDCG@10", b, a, ms, decided))
    card_path = bundled.FOLDER / bundled.CARD
    card = json.loads(card_path.read_text())
    card["on_by_default"] = decided
    card.setdefault("figures", {})["guard"] = [dict(zip(GUARD_COLS, r)) for r in rows]
    card_path.write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    print_table("the guard: where plain queries rerank by default", GUARD_COLS, rows, width=170)


GUARD_COLS = ("language", "figure", "held-out questions", "before", "after", "p", "ms p50", "on by default")


def _pair(name: str, work: Path):
    aset, ix = _indexed(name, work)
    return ix, _held(aset)


def _decide(lang: str, figure: str, before: list[float], after: list[float], ms: list[float], decided: list) -> tuple:
    told, p = guard.better(before, after)
    cost = statistics.median(ms) if ms else 0.0
    on = told and cost <= BUDGET_MS
    if on:
        decided.append(lang)
    return (lang, figure, len(before), f"{np.mean(before):.3f}", f"{np.mean(after):.3f}", f"{p:.3f}", f"{cost:.0f}", on)


if __name__ == "__main__":
    sys.exit(cli.main())
