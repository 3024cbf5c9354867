#!/usr/bin/env python
"""ragkit learns from its users: simulated users, a loud user, and what learning costs.

    python scripts/bench_learn.py SUBCOMMAND [options]     (SUBCOMMAND --help for its options)

Subcommands:
  simulate  per labelled set: replay its fit half as users' feedback (a good click on the gold passage when it
            is in the top 10, a bad one on the passage above it) through the feedback API, ``ragkit learn``, then
            measure its held-out half before (today's ranker) and after, one table
  answers   per set: its fit half's answers rated (good when they hold the gold answer, or abstain on an absent
            topic), ``ragkit learn``, then the held-out half's answers before and after
  loud      one user clicks "good" 100 times on an irrelevant passage for one question: learn, then where does
            that passage rank for every other question (before / after)
  cost      ``ragkit learn`` on N feedback events (seconds), and what the adopted ranker adds to a warm query
  default   the ranker ragkit ships: fitted on every set's fit half, measured on the held-out halves against the
            hand-set weights; written to ragkit/rerank/ranker_model.json only when they say so

The sets (the splits in tests/data/answer_splits.json): german (questions with their section), swedish (questions
with their page), scifact (claims with their abstracts: nDCG@10), hotpotqa (questions with their two paragraphs:
recall@5). Every subcommand also takes ``--json``.
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from dataclasses import replace
from pathlib import Path

import harness
import numpy as np
from harness import arg, print_table

from ragkit.config import QueryConfig
from ragkit.evaluate import documents_of, load_dataset, ndcg_at, recall_at

cli = harness.CLI(__doc__)
sets = harness.tests_module("answer_sets")
quality = harness.tests_module("quality")
WORK = arg("--work", type=Path, default=Path("/tmp/ragkit-bench-learn"), help="indexes and corpora")
SOURCES = {
    "german": lambda: sets.NEEDS["german"],
    "swedish": lambda: sets.NEEDS["swedish"],
    "scifact": lambda: sets.SCIFACT / "corpus.jsonl",
    "hotpotqa": lambda: sets.NEEDS["hotpotqa"] / "corpus.jsonl",
}


class Labelled:
    """A set's questions of one half, each with a test of which passage answers it, and the set's measure."""

    def __init__(self, name: str, half: str):
        self.name = name
        split = sets.split_of(name)
        if name in ("german", "swedish"):
            good, _ = sets.load(name).half(half, split)
            self.questions = [q for q in good if q.get("section") or q.get("pages")]
        else:
            ds = load_dataset(sets.SCIFACT if name == "scifact" else sets.NEEDS["hotpotqa"])
            self.qrels = ds.qrels
            chosen = [(qid, text) for qid, text in sorted(ds.queries.items()) if split.get(qid, "fit") == half]
            self.questions = [{"id": qid, "query": text} for qid, text in chosen]

    def gold(self, q: dict, p) -> bool:
        """Does passage ``p`` answer ``q``?"""
        return self._gold(q, p.path, p.section, p.pages, p.path.rsplit("#", 1)[-1])

    def gold_hit(self, q: dict, h) -> bool:
        """Does candidate chunk ``h`` answer ``q``?"""
        pages = [h.page_start, h.page_end or h.page_start] if h.page_start is not None else None
        return self._gold(q, h.path, h.header, pages, h.external_id)

    def _gold(self, q: dict, path: str, section: str, pages, external: str) -> bool:
        if self.name == "german":
            sections = q["section"] if isinstance(q["section"], list) else [q["section"]]
            return section.split(" > ")[-1] in sections and quality._in_law(path, q["law"])
        if self.name == "swedish":
            if q["kind"] == "reference" and quality._SE_REF.fullmatch(q["ref"].strip()):
                return path.endswith(q["doc"]) and quality.is_cited_section(_Placed(section), q["ref"])
            first, last = q["pages"]
            return path.endswith(q["doc"]) and bool(pages) and pages[0] <= last and pages[1] >= first
        return external in self.qrels[q["id"]]

    def measure(self, ix, learned: bool) -> dict[str, float]:
        """The set's figures over these questions: top-1 and top-3 (german, swedish), nDCG@10 (scifact),
        recall@5 (hotpotqa)."""
        cfg = QueryConfig(k=10, learned=learned, log=False)
        if self.name in ("german", "swedish"):
            ranks = []
            for q in self.questions:
                passages = ix.query(q["query"], cfg).passages
                ranks.append(next((p.rank for p in passages if self.gold(q, p)), None))
            return {
                "top1": round(sum(r == 1 for r in ranks) / len(ranks), 4),
                "top3": round(sum(r is not None and r <= 3 for r in ranks) / len(ranks), 4),
            }
        scores = []
        for q in self.questions:
            hits, _, _ = ix.retrieve(q["query"], replace(cfg, k=100))
            ranked = documents_of(hits, 100)
            rels = self.qrels[q["id"]]
            scores.append(ndcg_at(ranked, rels) if self.name == "scifact" else recall_at(ranked, rels, 5))
        return {"ndcg@10" if self.name == "scifact" else "recall@5": round(statistics.fmean(scores), 4)}


class _Placed:
    def __init__(self, section: str):
        self.section = section


def fresh_index(name: str, work: Path):
    """The set's index (built once) with no feedback and no learned ranker of an earlier run."""
    ix, _ = harness.indexed(SOURCES[name](), work / "indexes" / name)
    shutil.rmtree(ix.path / "feedback", ignore_errors=True)
    shutil.rmtree(ix.path / "learned", ignore_errors=True)
    return harness.open_index(ix.path)


def retriever(ix):
    """``ix.retrieve`` as ragkit.learn.ranker calls a retriever: ``(reader, text, cfg)``."""
    return lambda _reader, text, cfg, limit=None: ix.retrieve(text, cfg, limit)


def replay(ix, fit: Labelled) -> tuple[int, int]:
    """The fit half as users' feedback: a good click on the gold passage in the top 10, a bad one on the
    passage above it. Returns (questions clicked, events)."""
    clicked = events = 0
    cfg = QueryConfig(k=10, learned=False)
    for q in fit.questions:
        result = ix.query(q["query"], cfg)
        ix.log(result, cfg, source="simulated")
        rank = next((p.rank for p in result.passages if fit.gold(q, p)), None)
        if rank is None:
            continue
        ix.feedback(result.query_id, rank=rank, grade="good", source="simulated")
        clicked, events = clicked + 1, events + 1
        if rank > 1:
            ix.feedback(result.query_id, rank=rank - 1, grade="bad", source="simulated")
            events += 1
    return clicked, events


@cli.command("simulate", arg("--sets", default="german,swedish,scifact,hotpotqa"), WORK)
def simulate(args) -> None:
    """Simulated users per set: the fit half's clicks → ``ragkit learn`` → the held-out half before and after."""
    rows = []
    for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
        ix = fresh_index(name, args.work)
        fit, held = Labelled(name, "fit"), Labelled(name, "held_out")
        before = held.measure(ix, learned=False)
        t = time.perf_counter()
        clicked, events = replay(ix, fit)
        replay_s = time.perf_counter() - t
        t = time.perf_counter()
        outcomes = ix.learn()
        learn_s = time.perf_counter() - t
        ix = harness.open_index(ix.path)
        after = held.measure(ix, learned=True)
        o = next((o for o in outcomes if o.scope == "all"), None)
        for metric in before:
            rows.append(
                (
                    name,
                    metric,
                    f"{before[metric]:.3f}",
                    f"{after[metric]:.3f}",
                    f"{after[metric] - before[metric]:+.3f}",
                    f"{len(fit.questions)} / {clicked} / {events}",
                    len(held.questions),
                    ("adopted" if o and o.adopted else f"kept ({o.reason if o else 'no feedback'})"),
                    f"{replay_s:.0f} / {learn_s:.0f}",
                )
            )
    cols = ("set", "held-out figure", "before", "after", "change", "fit: questions / clicked / events")
    cols += ("held out", "model", "replay / learn s")
    print_table("simulated users: the fit half's clicks, the held-out half measured", cols, rows, width=180)


@cli.command("answers", arg("--sets", default="german,swedish,hotpotqa"), WORK)
def answers(args) -> None:
    """Simulated raters of answers per set: each fit-half question, answerable or on an absent topic, asked with
    an extractive answer and the answer rated (an answerable question's: good when it holds the gold answer, an
    absent topic's: good when it abstained), ``ragkit learn`` (its guard holds out a third of the rated answers),
    then the held-out half's answers before and after: the gold answer contained (of all answerable questions,
    and of those answered), answerable questions abstained on, absent topics abstained on, and the threshold
    learned."""
    rows = []
    for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
        ix = fresh_index(name, args.work)
        aset, split = sets.load(name), sets.split_of(name)
        fit_good, fit_bad = aset.half("fit", split)
        held_good, held_bad = aset.half("held_out", split)
        before = sets.answer_measures(ix, held_good, held_bad)
        cfg = QueryConfig(k=10, answer=True, answer_mode="extract")
        rated = 0
        for q in fit_good + fit_bad:
            result = ix.query(q["query"], cfg)
            a = ix.answer_for(result, cfg).answer
            ix.log(result, cfg, source="simulated")
            good = a.abstained if q in fit_bad else sets.norm(q["answer"]) in sets.norm(a.text)
            ix.feedback(result.query_id, rank=None, grade="good" if good else "bad", source="simulated")
            rated += 1
        t = time.perf_counter()
        outcomes = [o for o in ix.learn() if o.kind == "abstain"]
        learn_s = time.perf_counter() - t
        ix = harness.open_index(ix.path)
        after = sets.answer_measures(ix, held_good, held_bad)
        model = "; ".join(
            f"{o.scope}: {o.before.get('threshold', 0):.3f} → {o.after.get('threshold', 0):.3f}, "
            f"{'adopted' if o.adopted else o.reason}"
            for o in outcomes
        )
        for m in (before, after):  # of the answers given to answerable questions, the share holding the gold
            m["right_when_answered"] = m["contained"] / m["answered"] if m["answered"] else 0.0
        figures = (("contained", "contained"), ("right_when_answered", "contained when answered"))
        figures += (("answered", "abstain answerable"), ("abstain_absent", "abstain absent"))
        for key, label in figures:
            if key not in before:
                continue
            b, a = before[key], after[key]
            if key == "answered":  # shown as the share abstained on
                b, a = 1 - b, 1 - a
            rows.append(
                (
                    name,
                    label,
                    f"{b:.3f}",
                    f"{a:.3f}",
                    f"{a - b:+.3f}",
                    f"{len(fit_good)} + {len(fit_bad)} / {rated}",
                    f"{len(held_good)} + {len(held_bad)}",
                    model,
                    f"{learn_s:.0f}",
                )
            )
            model = ""
    cols = ("set", "held-out figure", "before", "after", "change", "fit: questions + absent / rated")
    cols += ("held out", "threshold", "learn s")
    print_table(
        "simulated raters of answers: the fit half's ratings, the held-out half measured", cols, rows, width=200
    )


@cli.command("loud", arg("--set", dest="name", default="german"), arg("--clicks", type=int, default=100), WORK)
def loud(args) -> None:
    """One loud user: ``--clicks`` good clicks on one irrelevant passage (the 10th) for one held-out question,
    the fit half's clicks beside them; learn; where that passage ranks for the other questions (top 3 before /
    after) and for the loud question itself."""
    ix = fresh_index(args.name, args.work)
    fit, held = Labelled(args.name, "fit"), Labelled(args.name, "held_out")
    replay(ix, fit)
    target_q = held.questions[0]
    cfg = QueryConfig(k=10, learned=False)
    result = ix.query(target_q["query"], cfg)
    ix.log(result, cfg, source="loud")
    victim = result.passages[-1]
    for _ in range(args.clicks):
        ix.feedback(result.query_id, rank=victim.rank, grade="good", source="loud")
    top3_before = _in_top3(ix, held.questions[1:], victim, learned=False)
    outcomes = ix.learn()
    ix = harness.open_index(ix.path)
    top3_after = _in_top3(ix, held.questions[1:], victim, learned=True)
    own = next(
        (p.rank for p in ix.query(target_q["query"], QueryConfig(k=10, log=False)).passages if _same(p, victim)),
        None,
    )
    rows = [
        ("loud question", target_q["query"][:60]),
        ("its passage clicked", f"{victim.path} · {victim.section.split(' > ')[-1]} (rank {victim.rank})"),
        ("clicks", args.clicks),
        ("model", "; ".join(f"{o.scope}: {'adopted' if o.adopted else o.reason}" for o in outcomes)),
        (
            "the passage in another question's top 3, before / after",
            f"{top3_before} / {top3_after} of {len(held.questions) - 1}",
        ),
        ("its rank for the loud question after", own),
    ]
    print_table("a loud user", ("", "value"), rows, width=160)


def _same(p, other) -> bool:
    return p.path == other.path and p.section == other.section


def _in_top3(ix, questions, victim, learned: bool) -> int:
    cfg = QueryConfig(k=3, learned=learned, log=False)
    return sum(any(_same(p, victim) for p in ix.query(q["query"], cfg).passages) for q in questions)


@cli.command("cost", arg("--set", dest="name", default="german"), arg("--events", type=int, default=5000), WORK)
def cost(args) -> None:
    """``ragkit learn`` on ``--events`` feedback events (the fit half's questions asked again and again, each
    with a good and a bad click, as many users would), and the warm query latency with and without the learned
    ranker (hybrid, p50 of the held-out questions × 3, alternating)."""
    ix = fresh_index(args.name, args.work)
    fit, held = Labelled(args.name, "fit"), Labelled(args.name, "held_out")
    events = 0
    while events < args.events:
        _, n = replay(ix, fit)
        events += n + len(fit.questions)  # (each query's log line counts as an event too)
    t = time.perf_counter()
    outcomes = ix.learn(min_queries=1)
    learn_s = time.perf_counter() - t
    if not any(o.adopted for o in outcomes):  # (a model in place all the same: what it adds to a query is measured)
        from ragkit.learn import ranker as ranking
        from ragkit.learn.feedback import Feedback

        groups = ranking.feedback_groups(ix.reader, Feedback(ix.path).judged(), retriever(ix))
        ranking.adopt(ix.path, "all", ranking.fit(groups), ranking.Outcome("all", len(groups)))
    ix = harness.open_index(ix.path)
    on, off = [], []
    for _ in range(3):
        for q in held.questions:
            for learned, out in ((True, on), (False, off)):
                cfg = QueryConfig(strategy="hybrid", k=10, learned=learned, log=False)
                t = time.perf_counter()
                ix.query(q["query"], cfg)
                out.append((time.perf_counter() - t) * 1000)
    adopted = any(o.adopted for o in outcomes)
    rows = [
        ("feedback events in the log", events),
        ("ragkit learn, seconds", f"{learn_s:.1f}"),
        (
            "a model adopted by the guard",
            "yes"
            if adopted
            else "no (" + "; ".join(o.reason for o in outcomes) + "): one fitted and put in place for the latency",
        ),
        ("warm hybrid p50 ms, without / with the learned ranker", f"{np.median(off):.2f} / {np.median(on):.2f}"),
        ("added p50 ms", f"{np.median(on) - np.median(off):+.2f}"),
    ]
    print_table(f"what learning costs ({args.name})", ("", "value"), rows, width=140)


@cli.command(
    "default",
    arg("--sets", default="german,swedish,scifact,hotpotqa"),
    WORK,
    arg("--write", action="store_true", help="write ragkit/rerank/ranker_model.json when the held-out halves say so"),
)
def default(args) -> None:
    """The ranker ragkit ships: LambdaRank (as ``ragkit learn`` fits it) on every set's fit half, labelled from
    the sets' gold (the passage's section, page or document), measured on every held-out half against the
    hand-set weights; written (``--write``) only when no set's held-out figure falls by more than 0.005 and
    one rises."""
    from ragkit.learn import ranker as ranking
    from ragkit.rerank import ranker as shipped
    from ragkit.rerank.ranker import hit_matrix

    names = [s.strip() for s in args.sets.split(",") if s.strip()]
    indexes = {name: fresh_index(name, args.work) for name in names}
    groups = []
    for name in names:
        fit = Labelled(name, "fit")
        for q in fit.questions:
            ix = indexes[name]
            hits = ranking.candidates(ix.reader, q["query"], QueryConfig(k=10, log=False), retriever(ix))
            labels = [4 if fit.gold_hit(q, h) else ranking.UNJUDGED for h in hits]
            groups.append(ranking.Group(q["query"], "all", hit_matrix(hits, q["query"], _language(q["query"])),
                                        np.asarray(labels, dtype=np.int32), np.arange(len(hits)), name))  # fmt: skip
    model = ranking.fit([g for g in groups if g.useful])
    model.meta = {"fitted_on": {n: sum(g.source == n and g.useful for g in groups) for n in names}}
    model.meta |= {"script": "python scripts/bench_learn.py default --write"}
    path = shipped.SHIPPED
    saved = path.read_bytes() if path.is_file() else None
    rows, deltas = [], []
    try:
        path.write_text(json.dumps(model.to_json()) + "\n")
        shipped.shipped.cache_clear()
        for name in names:
            held = Labelled(name, "held_out")
            ix = harness.open_index(indexes[name].path)
            before, after = held.measure(ix, learned=False), held.measure(ix, learned=True)
            for metric in before:
                deltas.append(after[metric] - before[metric])
                rows.append((name, metric, f"{before[metric]:.3f}", f"{after[metric]:.3f}", f"{deltas[-1]:+.3f}"))
    finally:
        if saved is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(saved)
        shipped.shipped.cache_clear()
    better = min(deltas) >= -0.005 and max(deltas) > 0
    if better and args.write:
        path.write_text(json.dumps(model.to_json()) + "\n")
    verdict = "adopted" if better else "kept the hand-set weights (the held-out halves say no)"
    note = f"{verdict}{'' if args.write or not better else ' (run with --write to ship it)'}"
    print_table(
        "the shipped ranker: fit halves → held-out halves (hand-set → learned)",
        ("set", "figure", "hand-set", "learned", "change"),
        rows,
        notes=[note],
    )


def _language(text: str) -> str:
    from ragkit.text import query_language

    return query_language(text)


if __name__ == "__main__":
    cli.main()
