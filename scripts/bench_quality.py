#!/usr/bin/env python
"""Retrieval quality and what structure costs: the quality gate's figures, tuning sweeps, planner, tree, passages.

    python scripts/bench_quality.py SUBCOMMAND [options]     (SUBCOMMAND --help for its options)

Subcommands:
  report         what the quality gate checks, beside the recorded floors (tests/data/quality_floors.toml)
  swedish        the Swedish questions over indexes of the regulation PDFs side by side (e.g. old and new reading)
  fusion         sweep the hybrid fusion weight (alpha), convex and weighted RRF, retrieving once
  features       tune a mode's structure-feature weights on a BEIR train set (coordinate ascent on nDCG@10)
  graph          query settings (strategies, graph and planner knobs) side by side on a labelled data set
  router-labels  build the router's labelled set (tests/data/router_labels.jsonl) and measure its accuracy
  typos          spelling robustness: nDCG@10 on clean queries and with injected typos, correction on and off
  planner        rule-based planner + router latency over data set queries
  passages       passage quality (coherence, length, reference hits) and the cost of structure
  tree           summary-tree (RAPTOR-lite) build time and storage against the flat index
  extract        index time with rule-based entity extraction against without

Subcommands that take a BEIR data set and ``--index`` (features, graph, typos, fusion) use the index given as
it is; without ``--index`` they index the data set's corpus into the index ``ragkit eval DATASET`` builds
(indexes/eval-NAME; an unchanged one is reused). ``report`` loads tests/quality.py by path
(harness.tests_module). Every subcommand also takes ``--json`` (each table as one JSON object per line).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import statistics
import string
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import harness
from harness import arg, print_table, query_config

from ragkit.config import IndexConfig
from ragkit.evaluate import documents_of, load_dataset, ndcg_at, percentile, recall_at

cli = harness.CLI(__doc__)
DATASET = arg("dataset", type=Path, help="a BEIR data set folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)")
EVAL_INDEX = arg("--index", help="an index of the data set (default: ragkit eval's, built or updated here)")


def dataset_index(args):
    """The data set and its index, open: ``--index`` as it is, else ragkit eval's index (indexed here)."""
    ds = load_dataset(args.dataset)
    if args.index:
        return ds, harness.open_index(args.index)
    return ds, harness.indexed(ds.corpus, harness.eval_index(args.dataset))[0]


# --- report --------------------------------------------------------------------------------------------------------


@cli.command(
    "report",
    arg("--work", type=Path, help="folder for the indexes (default: a temporary folder)"),
    arg("--set", default="hotpotqa,legal,german,swedish,router", help="which measurements (comma-separated)"),
)
def report(args) -> None:
    """Measure what the quality gate checks and print it beside the recorded floors (tests/data/quality_floors.toml).

        python scripts/bench_quality.py report [--work DIR] [--set hotpotqa,legal,german,swedish,router]

    Indexes ../shared/data/hotpotqa-100, the shared German laws and the Swedish regulations with the default
    settings and the real bundled model (into DIR, default a temporary folder; an existing index there is updated
    incrementally), runs every recorded hotpotqa strategy on all 100 questions, the legal reference queries, the
    German questions, the Swedish questions and the router's labelled set. Use it to raise a floor after an improvement (copy the measured figure into the
    floors file and name it in the change's note), or to see by how much a change missed one.
    """
    quality = harness.tests_module("quality")
    wanted = set(args.set.split(","))
    work = harness.workdir(args.work, "quality")
    fl = quality.floors()
    checks, notes = [], []
    if "hotpotqa" in wanted:
        t = time.perf_counter()
        hp = fl["hotpotqa"]
        results = quality.hotpotqa_eval(work / "hotpotqa", hp["k"], list(hp["recorded"]))
        checks += quality.hotpotqa_checks(results, hp["recorded"], fl["tolerance"])
        notes.append(f"hotpotqa (index + eval): {time.perf_counter() - t:.1f} s")
    if "legal" in wanted:
        t = time.perf_counter()
        ix, _ = harness.indexed(quality.GERMAN_LAWS, work / "laws")
        queries = quality.legal_queries()
        misses = quality.legal_misses(ix, queries)
        hits = len(queries) - len(misses)
        checks.append(quality.Check("legal references, top-1 hits", hits, fl["legal"]["top1_hits"], 0))
        notes += [f"legal miss: {q!r} → {got}" for q, got in misses]
        notes.append(f"german laws (index + queries): {time.perf_counter() - t:.1f} s")
    if "german" in wanted:
        t = time.perf_counter()
        ix, _ = harness.indexed(quality.GERMAN_LAWS, work / "laws")
        for label, key in (("", ""), (" held out", "held_out_")):
            hits = quality.german_hits(ix, quality.german_questions(held_out=bool(key)))
            checks += [
                quality.Check(f"German questions{label} {m}", v, fl["german"][key + m], fl["tolerance"])
                for m, v in hits.items()
            ]
        notes.append(f"german questions: {time.perf_counter() - t:.1f} s")
    if "swedish" in wanted:
        t = time.perf_counter()
        ix, _ = harness.indexed(quality.SWEDISH_REGULATIONS, work / "swedish")
        hits = quality.swedish_hits(ix, quality.swedish_questions())
        checks += [
            quality.Check(f"Swedish questions {m}", v, fl["swedish"][m], fl["tolerance"]) for m, v in hits.items()
        ]
        notes.append(f"swedish questions: {time.perf_counter() - t:.1f} s")
    if "router" in wanted:
        checks += quality.router_checks(fl["router"])
    rows = [(c.name, f"{c.got:.4f}", f"{c.recorded:.4f}", f"{c.floor:.4f}", "ok" if c.ok else "BELOW") for c in checks]
    cols = ("figure", "measured", "recorded", "floor", "")
    print_table(f"quality gate figures (indexes in {work})", cols, rows, width=120, notes=notes)


@cli.command(
    "swedish",
    arg("--index", action="append", required=True, help="an index of ../shared/data/swedish-regulations (repeatable)"),
)
def swedish(args) -> None:
    """Swedish questions over the regulation PDFs, one row per index, queried by this checkout (strategy auto,
    k 3): the cited paragraph first (reference questions), the gold page first / in the first three (everyday).

        python scripts/bench_quality.py swedish --index BEFORE --index AFTER

    Give an index built by an older checkout beside one built by this one to see what the reading of the PDFs
    (text, structure) changes, with the same query code."""
    quality = harness.tests_module("quality")
    questions = quality.swedish_questions()
    n = {kind: sum(q["kind"] == kind for q in questions) for kind in ("reference", "everyday")}
    rows = []
    for index in args.index:
        hits = quality.swedish_hits(harness.open_index(index), questions)
        rows.append((index, hits["reference_top1"], hits["everyday_top1"], hits["everyday_top3"]))
    cols = ("index", f"cited paragraph first ({n['reference']})", f"everyday page top-1 ({n['everyday']})", "top-3")
    print_table("Swedish questions (auto, k 3)", cols, rows, width=140)


# --- fusion --------------------------------------------------------------------------------------------------------


@cli.command(
    "fusion",
    DATASET,
    EVAL_INDEX,
    arg("--alphas", default="0.2,0.3,0.4,0.5,0.6,0.7,0.8"),
    arg("--k", type=int, default=100),
)
def fusion(args) -> None:
    """Sweep the hybrid fusion weight (alpha) on a BEIR dataset, for convex and weighted RRF fusion, retrieving once.

        python scripts/bench_quality.py fusion ../shared/data/scifact-train [--index DIR]
            [--alphas 0.2,0.3,0.4,0.5,0.6,0.7,0.8] [--k 100]

    The dense and BM25 lists of every query are fetched once (each retriever's own list: no reranking, links
    or retry); each alpha then only re-fuses them, so the sweep costs one retrieval pass. A second table runs
    hybrid as queries do (reranking, links, retry) with each fusion at the default alpha. Tune on train splits
    only.
    """
    from ragkit.retrieve.fusion import convex, weighted_rrf

    ds, ix = dataset_index(args)
    lists = {}
    plain = query_config(syntax=False, links=False, rerank="none", retry=False)  # each retriever's own list
    for qid, text in ds.queries.items():
        dense, _, _ = ix.retrieve(text, replace(plain, strategy="naive"), 4 * 2 * args.k)
        lex, _, _ = ix.retrieve(text, replace(plain, strategy="lexical"), 4 * 2 * args.k)
        lists[qid] = (dense, lex, ix.reader.embedder.encode_query(text))
    fusions = {
        "convex": lambda d, b, a, q: convex(d, b, a, q),
        "weighted RRF": lambda d, b, a, q: weighted_rrf({"dense": d, "lexical": b}, {"dense": a, "lexical": 1 - a}),
    }
    rows = []
    for method, fuse in fusions.items():
        for alpha in [float(a) for a in args.alphas.split(",")]:
            nd, r10, r100 = [], [], []
            for qid, (dense, lex, qvec) in lists.items():
                ranked = documents_of(fuse(dense, lex, alpha, qvec)[: 2 * args.k], args.k)
                nd.append(ndcg_at(ranked, ds.qrels[qid]))
                r10.append(recall_at(ranked, ds.qrels[qid], 10))
                r100.append(recall_at(ranked, ds.qrels[qid], 100))
            rows.append((method, f"{alpha:.2f}", *(f"{statistics.fmean(v):.4f}" for v in (nd, r10, r100))))
    title = f"fusion of dense and BM25 on {args.dataset.name}, {len(lists)} queries (no rerank, no links)"
    print_table(title, ("fusion", "alpha (dense weight)", "nDCG@10", "recall@10", "recall@100"), rows)
    # the same two fusions as queries run them: hybrid with the default fetch, reranking, links and retry
    rows = []
    for method in ("convex", "rrf"):
        cfg = query_config(strategy="hybrid", fusion=method, syntax=False)
        nd, r10 = [], []
        for qid, text in ds.queries.items():
            ranked = harness.ranked_documents(ix, text, cfg, args.k)
            nd.append(ndcg_at(ranked, ds.qrels[qid]))
            r10.append(recall_at(ranked, ds.qrels[qid], 10))
        rows.append((method, f"{statistics.fmean(nd):.4f}", f"{statistics.fmean(r10):.4f}"))
    title = f"hybrid with the default settings on {args.dataset.name}, by fusion"
    print_table(title, ("fusion", "nDCG@10", "recall@10"), rows)


# --- features ------------------------------------------------------------------------------------------------------

GRID = [0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5]


@cli.command(
    "features",
    DATASET,
    EVAL_INDEX,
    arg("--mode", default="balanced"),
    arg("--strategy", default="hybrid"),
    arg("--k", type=int, default=100),
)
def features(args) -> None:
    """Tune the structure-feature weights of a mode on a BEIR train set (coordinate ascent on nDCG@10).

        python scripts/bench_quality.py features ../shared/data/scifact-train --index DIR [--mode balanced]
            [--strategy hybrid] [--k 100]

    Candidates and their features are computed once per query; each weight setting only re-scores them, so a
    sweep costs one retrieval pass. Prints the table of every step and the best weights (copy them into
    DEFAULT_WEIGHTS or ragkit.toml).
    """
    from ragkit.rerank.features import DEFAULT_WEIGHTS, FEATURES, FeatureContext, compute

    ds, ix = dataset_index(args)
    cfg = query_config(strategy=args.strategy, syntax=False, rerank="none")
    cached = []
    for qid, text in ds.queries.items():
        hits, plan, _ = ix.retrieve(text, cfg, 2 * args.k)
        feats = compute(hits, FeatureContext(text, ix.reader.graph, doc_types=set(plan.doc_type_routing)))
        cached.append((qid, [(h.external_id, feats[h.chunk_id]) for h in hits]))

    def score(weights: dict[str, float]) -> float:
        out = []
        for qid, cands in cached:
            ranked = sorted(cands, key=lambda c: -sum(weights[f] * v for f, v in c[1].items()))
            out.append(ndcg_at(list(dict.fromkeys(ext for ext, _ in ranked)), ds.qrels[qid]))
        return statistics.fmean(out)

    weights = dict(DEFAULT_WEIGHTS[args.mode])
    only_text = {f: (1.0 if f == "text_relevance" else 0.0) for f in FEATURES}
    best = score(weights)
    rows = [("-", "text_relevance only", "", f"{score(only_text):.4f}"), ("0", "defaults", "", f"{best:.4f}")]
    for _ in range(2):
        for f in FEATURES:
            if f in ("text_relevance", "reference_match", "is_latest", "doc_type_match"):
                continue  # anchors, or constant on a flat BEIR corpus
            for w in GRID:
                trial = {**weights, f: w}
                s = score(trial)
                if s > best + 1e-4:
                    best, weights = s, trial
                    rows.append((str(len(rows) - 1), f, f"{w:.2f}", f"{best:.4f}"))
    title = f"feature weights, mode {args.mode}, {args.strategy} on {args.dataset.name}"
    best_weights = json.dumps({f: weights[f] for f in FEATURES})
    print_table(title, ("step", "feature", "weight", "nDCG@10"), rows, width=100, notes=[f"best: {best_weights}"])


# --- graph ---------------------------------------------------------------------------------------------------------


@cli.command("graph", DATASET, arg("rows", nargs="+"), EVAL_INDEX, arg("--k", type=int, default=20))
def graph(args) -> None:
    """Query settings (strategies, graph and planner knobs) side by side on a labelled dataset (one index, one
    loaded model).

        python scripts/bench_quality.py graph ../shared/data/hotpotqa-100 --index <index built by ragkit eval> \\
            "strategy=hybrid" "strategy=hippo" "strategy=hippo,vector_seeds=0" "strategy=hippo,passage_share=0.2"

    Each argument is one row: comma-separated query settings (strategy, alpha, rerank, expand …, and strategy
    settings by their old flat names vector_seeds, passage_share, ppr_weight, damping, entity_weight, max_hops,
    tree_mode … or as strategy.setting, e.g. hippo.damping=0.9; harness.query_config builds the QueryConfig).
    Prints nDCG@10, recall@2/5/10 and p50 latency.
    """
    ds, ix = dataset_index(args)
    ix.reader.embedder.encode_query("warm up")
    rows = []
    for spec in args.rows:
        cfg = query_config(**{"k": args.k, "syntax": False} | harness.parse_settings(spec))
        r = harness.score(ix, ds, cfg, spec, args.k)
        recall = (f"{r.metrics[f'recall@{n}']:.3f}" for n in (2, 5, 10))
        rows.append((spec, f"{r.metrics['ndcg@10']:.4f}", *recall, f"{r.latency_ms['p50']:.0f}"))
    cols = ("settings", "nDCG@10", "recall@2", "recall@5", "recall@10", "p50 ms")
    print_table(f"{args.dataset.name}: {len(ds.queries)} queries, k = {args.k}", cols, rows, width=120)


# --- router-labels -------------------------------------------------------------------------------------------------

CANDIDATES = ["naive", "lexical", "hybrid", "hippo", "global", "hierarchical"]


@cli.command(
    "router-labels",
    arg("pairs", nargs="+", help="DATASET=INDEX"),
    arg("--out", type=Path, required=True),
    arg("--n", type=int, default=40),
)
def router_labels(args) -> None:
    """Build the router's labelled set and measure its accuracy.

        python scripts/bench_quality.py router-labels --out tests/data/router_labels.jsonl \\
            ../shared/data/scifact-train=<scifact index> ../shared/data/hotpotqa-100=<hotpot index> \\
            tests/data/rust-book-queries=<index of ../shared/data/rust-book> [--n 40]

    For the first N queries of each dataset (BEIR indexes built by ``ragkit eval``; a folder with only
    queries.jsonl and qrels is judged against the index given for it), every routable strategy is run and
    scored by nDCG@10; a query's label is the set of strategies that reach the best score (ties are common:
    several strategies often rank the gold document first). The router is right when its choice is in that
    set. Each record also keeps what the router saw (the plan's identifiers and the query's entities the index
    knows), so tests can re-run the rules without the index.
    """
    from ragkit.retrieve.router import plan_and_route

    records, rows = [], []
    for pair in args.pairs:
        dataset, index = pair.split("=", 1)
        ds = load_dataset(Path(dataset), corpus_required=False)
        ix = harness.open_index(index)
        facts = ix.reader.facts
        qids = sorted(ds.queries)[: args.n]
        right = hybrid_right = 0
        routed: dict[str, int] = {}
        for qid in qids:
            text = ds.queries[qid]
            scores = {}
            for name in CANDIDATES:
                cfg = query_config(strategy=name, k=10, syntax=False, retry=False)
                ranked = harness.ranked_documents(ix, text, cfg, 10)
                scores[name] = round(ndcg_at(ranked, ds.qrels[qid]), 4)
            best = sorted(n for n, v in scores.items() if v == max(scores.values()))
            plan, _ = plan_and_route(ix.reader, text, query_config(syntax=False))
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
        shares = (f"{x / len(qids):.3f}" for x in (right, hybrid_right))
        rows.append((Path(dataset).name, len(qids), *shares, ", ".join(f"{k} {v}" for k, v in sorted(routed.items()))))
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    title = "router accuracy (choice among the best-scoring strategies, nDCG@10)"
    cols = ("dataset", "queries", "accuracy", "always hybrid", "routed")
    print_table(title, cols, rows, left=("dataset", "routed"), width=120)


# --- typos ---------------------------------------------------------------------------------------------------------


@cli.command(
    "typos",
    DATASET,
    EVAL_INDEX,
    arg("--rate", type=float, default=0.3),
    arg("--seed", type=int, default=13),
    arg("--strategy", default="hybrid"),
    arg("--k", type=int, default=100),
)
def typos(args) -> None:
    """Spelling robustness: nDCG@10 on clean queries and on a copy with injected typos, correction on and off.

        python scripts/bench_quality.py typos ../shared/data/scifact-train --index <index built by ragkit eval>
            [--rate 0.3] [--seed 13] [--strategy hybrid] [--k 100]

    Typos: one random edit (delete, insert, substitute or swap adjacent letters) in ``--rate`` of the words of
    four or more letters, with a fixed seed. The index given is reused as it is.
    """
    ds, ix = dataset_index(args)
    rng = random.Random(args.seed)
    noisy = replace(ds, queries={qid: with_typos(q, args.rate, rng) for qid, q in sorted(ds.queries.items())})
    changed = sum(noisy.queries[q] != ds.queries[q] for q in ds.queries)
    ix.reader.embedder.encode_query("warm up")
    rows = []
    for label, data in (("clean", ds), ("with typos", noisy)):
        for spelling in (False, True):
            cfg = query_config(strategy=args.strategy, k=args.k, syntax=False, spelling=spelling)
            r = harness.score(ix, data, cfg, label, args.k)
            metrics = (f"{r.metrics['ndcg@10']:.4f}", f"{r.metrics['recall@10']:.4f}", f"{r.latency_ms['p50']:.0f}")
            rows.append((label, "on" if spelling else "off", *metrics))
    title = f"{args.dataset.name}: {args.strategy}, typos in {args.rate:.0%} of words "
    title += f"({changed} of {len(ds.queries)} queries changed)"
    cols = ("queries", "spelling correction", "nDCG@10", "recall@10", "p50 ms")
    print_table(title, cols, rows, left=cols[:2], width=110)


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


# --- planner -------------------------------------------------------------------------------------------------------


@cli.command("planner", arg("queries", nargs="+", type=Path, help="BEIR queries.jsonl files"))
def planner(args) -> None:
    """Rule-based planner latency: p50/p95 of plan_query (+ routing) over dataset queries.

        python scripts/bench_quality.py planner ../shared/data/scifact-train/queries.jsonl \\
            ../shared/data/hotpotqa-100/queries.jsonl
    """
    from ragkit.retrieve.planner import plan_query
    from ragkit.retrieve.router import route

    doc_types = {"policy", "contract", "law", "technical", "paper", "notes", "unknown"}
    plan_query("warm up", doc_types)
    rows = []
    for path in args.queries:
        texts = harness.query_texts(path)
        lat, routed = [], {}
        for q in texts:
            t = time.perf_counter()
            try:
                plan = plan_query(q, doc_types)
            except Exception:  # noqa: BLE001 — a query the planner rejects still counts its time
                lat.append((time.perf_counter() - t) * 1000)
                continue
            r = route(plan, [], True, True)
            lat.append((time.perf_counter() - t) * 1000)
            routed[r.strategy] = routed.get(r.strategy, 0) + 1
        p50, p95 = (f"{percentile(lat, q):.3f}" for q in (0.5, 0.95))
        rows.append((path.parent.name, len(texts), p50, p95, ", ".join(f"{k} {v}" for k, v in sorted(routed.items()))))
    title = "rule-based planner + router latency (target p50 < 5 ms)"
    cols = ("queries", "n", "p50 ms", "p95 ms", "routed")
    print_table(title, cols, rows, left=("queries", "routed"), width=120)


# --- passages ------------------------------------------------------------------------------------------------------


@cli.command(
    "passages",
    arg("--index", action="append", required=True, help="repeatable"),
    arg("--queries", type=int, default=100),
    arg("--legal", type=Path, help="legal query set, run against the first index"),
)
def passages(args) -> None:
    """Passage quality and the cost of structure: coherence, length, reference hits, overhead.

        python scripts/bench_quality.py passages --index indexes/laws --index indexes/rust-book [--queries 100]
            [--legal tests/data/legal_ref_queries.jsonl]

    Queries are section headings of each index (legal "§ n" prefixes stripped, so they are topic questions).
    For each index it prints: share of multi-chunk passages whose chunks are consecutive chunks of one section
    (checked on the evidence graph), mean passage length in tokens and chunks, mean coherence, and p50 times of
    hybrid retrieval vs. feature reranking + assembly (their ratio is the overhead). With --legal, the hit rate
    of the hand-made reference queries and the index's reference resolution counts.
    """
    rows = []
    for index in args.index:
        m = passage_figures(index, args.queries)
        overhead = 100 * (m["p50_features"] + m["p50_assembly"]) / m["p50_retrieval"]
        rows.append(
            (
                Path(index).name,
                m["queries"],
                m["passages"],
                m["multi"],
                f"{100 * m['adjacent_share']:.1f}%",
                f"{m['tokens']:.0f}",
                f"{m['chunks']:.2f}",
                f"{m['coherence']:.3f}",
                f"{m['p50_retrieval']:.1f}",
                f"{m['p50_features']:.1f}",
                f"{m['p50_assembly']:.2f}",
                f"{overhead:.1f}%",
            )
        )
    notes = []
    if args.legal:
        r = legal(args.index[0], args.legal)
        notes.append(
            f"legal references in {args.index[0]}: {r['detected']} detected, {r['doc']} resolved to a "
            f"document, {r['sec']} to a section, {r['unresolved']} unresolved (laws not indexed)"
        )
        notes.append(
            f"hand-made reference queries: {r['hits']}/{r['queries']} return the cited section first "
            f"({100 * r['hits'] / r['queries']:.0f}%)"
        )
    cols = ["index", "queries", "passages", "multi-chunk", "adjacent in one section", "mean tokens", "mean chunks"]
    cols += ["mean coherence", "p50 retrieval ms", "p50 features ms", "p50 assembly ms", "overhead"]
    title = "passages from section-heading queries (hybrid, features, k=10)"
    print_table(title, cols, rows, width=140, notes=notes)


def heading_queries(ix, n: int) -> list[str]:
    with ix.reader.duck() as store:
        heads = [r["heading"] for r in store.rows("SELECT heading FROM sections WHERE level >= 2")]
    heads = [re.sub(r"^\s*(§+|Art\.?|Artikel)\s*\d+[a-z]?\s*", "", h).strip() for h in heads]
    heads = sorted({h for h in heads if len(h.split()) >= 2})
    random.Random(7).shuffle(heads)
    return heads[:n]


def passage_figures(index: str, n: int) -> dict:
    from ragkit.assemble import assemble

    ix = harness.open_index(index)
    ix.reader.embedder.encode_query("warm up")
    graph = ix.reader.graph
    base = query_config(k=10)
    found, t_retr, t_feat, t_asm = [], [], [], []
    for q in heading_queries(ix, n):
        t = time.perf_counter()
        ix.retrieve(q, replace(base, rerank="none"))
        t_retr.append(time.perf_counter() - t)
        hits, _, timings = ix.retrieve(q, base)
        t_feat.append(timings.get("rerank", 0.0) / 1000)
        t = time.perf_counter()
        found.extend(assemble(hits, base.k, base.budget))
        t_asm.append(time.perf_counter() - t)
    multi = [p for p in found if len(p.chunk_ids) > 1]

    def adjacent_in_one_section(ids: list[str]) -> bool:
        return len({graph.get_section(c) for c in ids}) == 1 and all(
            b in graph.get_adjacent(a) for a, b in zip(ids, ids[1:])
        )

    ok = sum(adjacent_in_one_section(p.chunk_ids) for p in multi)
    times = (("retrieval", t_retr), ("features", t_feat), ("assembly", t_asm))
    return {
        "queries": len(t_retr),
        "passages": len(found),
        "multi": len(multi),
        "adjacent_share": ok / len(multi) if multi else 1.0,
        "tokens": statistics.fmean(p.token_count for p in found),
        "chunks": statistics.fmean(len(p.chunk_ids) for p in found),
        "coherence": statistics.fmean(p.coherence_score for p in multi) if multi else 1.0,
        **{f"p50_{name}": percentile([x * 1000 for x in v], 0.5) for name, v in times},
    }


def legal(index: str, path: Path) -> dict:
    ix = harness.open_index(index)
    qs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    hits = 0
    for q in qs:
        top = ix.query(q["query"], query_config(k=3)).passages[0]
        expected = q["section"] if isinstance(q["section"], list) else [q["section"]]
        hits += top.section.split(" > ")[-1] in expected and q["law"] in top.path
    with ix.reader.duck() as store:
        counts = store.rows(
            "SELECT count(*) AS detected, count(resolved_document_id) AS doc, "
            "count(resolved_section_id) AS sec FROM refs WHERE kind = 'law'"
        )[0]
        external = store.rows("SELECT count(*) AS n FROM refs WHERE kind = 'law' AND resolved_document_id IS NULL")[0]
    return {"queries": len(qs), "hits": hits, **counts, "unresolved": external["n"]}


# --- tree and extract: the same documents indexed twice with one loaded model ----------------------------------------


def side_by_side(corpus: Path, docs: int | None, cfg: IndexConfig, variants: dict[str, dict]):
    """``(work, {name: (seconds, index folder, index, summary)})``: ``corpus`` (its first ``docs`` documents)
    indexed from scratch once per variant (IndexConfig changes) in the temporary folder ``work``, with one
    loaded model."""
    work = Path(tempfile.mkdtemp(prefix="ragkit-side-"))
    src = harness.corpus_source(corpus, docs, work)
    cfg, emb = harness.load_model(src, cfg)
    out = {}
    for name, change in variants.items():
        t = time.perf_counter()
        ix, summary = harness.indexed(src, work / name, replace(cfg, **change), embedder=emb)
        out[name] = (time.perf_counter() - t, work / name, ix, summary)
    return work, out


@cli.command(
    "tree",
    arg("corpus", type=Path, help="a BEIR corpus.jsonl or a folder of documents"),
    arg("--docs", type=int, help="first N documents of a corpus.jsonl"),
)
def tree(args) -> None:
    """Summary-tree (RAPTOR-lite) build time and storage vs. the flat index, side by side in one run.

        python scripts/bench_quality.py tree ../shared/data/scifact-train/corpus.jsonl --docs 1000
        python scripts/bench_quality.py tree ../shared/data/rust-book/src

    Indexes the same documents (a BEIR corpus.jsonl, first N documents, or a folder) twice with one loaded
    model, ``tree = false`` and ``tree = true`` (entity extraction off in both, so only the tree differs), and
    prints index time, the tree step's own time, nodes per level, on-disk size and the overhead of the tree,
    plus the tree time scaled to 1,000 documents.
    """
    from ragkit.store.sizes import folder_bytes

    variants = {"off": {"tree": False}, "on": {"tree": True}}
    work, out = side_by_side(args.corpus, args.docs, replace(IndexConfig(), extract="none"), variants)
    try:
        rows, size = [], {}
        for name, (secs, folder, _, s) in out.items():
            size[name] = folder_bytes(folder)
            tree_s = f"{s.tree.get('seconds', 0):.2f}" if name == "on" else ""
            nodes = f"{s.tree.get('sections', 0)} / {s.tree.get('documents', 0)}" if name == "on" else ""
            rows.append(
                (name, s.total_documents, s.total_chunks, f"{secs:.1f}", tree_s, nodes, f"{size[name] / 1e6:.1f}")
            )
        (off_s, *_), (on_s, _, _, s) = out["off"], out["on"]
        per_1000 = s.tree.get("seconds", 0) * 1000 / max(1, s.total_documents)
        added = (f"{100 * (on_s - off_s) / off_s:+.1f}%", f"{per_1000:.1f} s / 1,000 docs", "")
        rows.append(("added", "", "", *added, f"{100 * (size['on'] - size['off']) / size['off']:+.1f}%"))
        name = args.corpus.parent.name if args.corpus.is_file() else args.corpus.name
        cols = ("tree", "documents", "chunks", "seconds", "tree step s", "nodes L1 / L2", "size MB")
        notes = ["targets: tree build < 5 min per 1,000 documents, storage overhead < 50 %"]
        print_table(f"{name}: index with and without the summary tree", cols, rows, notes=notes)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@cli.command("extract", arg("corpus", type=Path), arg("--docs", type=int))
def extract(args) -> None:
    """Index time with rule-based entity extraction vs. without, side by side in one run.

        python scripts/bench_quality.py extract ../shared/data/hotpotqa-100/corpus.jsonl [--docs N]

    Indexes the same BEIR corpus (first N documents) twice with one loaded model, ``extract = "none"`` and
    ``extract = "rules"``, and prints both times, the added share, and the entity / relation / mention counts.
    """
    counts = (
        "SELECT (SELECT count(*) FROM entities) AS e, (SELECT count(*) FROM relations) AS r, "
        "(SELECT count(*) FROM mentions) AS m, (SELECT string_agg(n || ' L' || level, ' + ') "
        "FROM (SELECT level, count(*) AS n FROM communities GROUP BY level ORDER BY level)) AS c"
    )
    variants = {mode: {"extract": mode} for mode in ("none", "rules")}
    work, out = side_by_side(args.corpus, args.docs, IndexConfig(), variants)
    try:
        rows = []
        for mode, (secs, _, ix, s) in out.items():
            with ix.reader.duck() as store:
                n = store.rows(counts)[0]
            stages = ", ".join(f"{k} {v:.1f}s" for k, v in s.seconds.items() if k != "total")
            rows.append((mode, f"{secs:.1f}", n["e"], n["r"], n["c"] or "0", n["m"], stages))
        added = f"+{100 * (out['rules'][0] - out['none'][0]) / out['none'][0]:.1f}%"
        rows.append(("added", added, "", "", "", "", "target < 50% (extraction, entity graph, communities)"))
        cols = ("extract", "seconds", "entities", "relations", "communities", "mentions", "stages")
        title = f"{args.corpus.parent.name}: indexing with and without entity extraction"
        print_table(title, cols, rows, left=("extract", "stages"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    cli.main()
