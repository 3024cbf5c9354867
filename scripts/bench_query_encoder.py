#!/usr/bin/env python
"""ragkit's own query encoder (issue 62) against e5's own, on the held-out halves only, side by side in one run.

  report   one table: per held-out set, e5's own question side ("original") and ragkit's ("ragkit", the shipped
           int8 graph): German and Swedish top-1 / top-3 of the gold section or page (strategy auto, as a user
           asks), xquad-de and SweQUAD-MC nDCG@10 of the gold paragraph or page; extractive answers (contained,
           abstained); one question's encoding p50; and the guard's verdict per language
  guard    the held-out guard alone; ``--write`` records its verdict in ragkit/embed/e5_query/card.json
           (``on_by_default``), which ``query_encoder = "auto"`` reads

The guard's rule, written before it was first run (issue 62) and not changed after: for each language (German:
the gate's German held-out half and xquad-de's; Swedish: the gate's Swedish held-out half and SweQUAD-MC's), the
per-question differences ragkit − original of each set's measure (top-1 of the gold section or page, 0 or 1, for
the gate's sets; nDCG@10 for xquad-de and SweQUAD-MC) are resampled 10,000 times (paired bootstrap, seed 62, each
set on its own); the language's statistic is the mean over its sets of each set's mean difference. ragkit's query
encoder becomes the default for the language when the statistic's 2.5th percentile is above zero (a gain at 95 %)
and no set of the language has the 2.5th percentile of its own mean difference below −0.02 (none clearly loses).

    python scripts/bench_query_encoder.py report [--work W] [--answers/--no-answers]
    python scripts/bench_query_encoder.py guard [--write]
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from pathlib import Path

import harness
import numpy as np
from harness import arg, print_table

from ragkit.config import QueryConfig
from ragkit.evaluate import documents_of, ndcg_at

cli = harness.CLI(__doc__)
sets = harness.tests_module("answer_sets")
WORK = arg("--work", type=Path, default=Path("/tmp/ragkit-bench-query-encoder"), help="indexes and corpora")
SETS = {"german": "de", "xquad": "de", "swedish": "sv", "swequad": "sv"}
CHOICES = ("original", "ragkit")
SEED = 62
RESAMPLES = 10_000
CARD = harness.REPO / "ragkit" / "embed" / "e5_query" / "card.json"


def _labelled(name: str):
    import bench_learn

    return bench_learn.Labelled(name, "held_out")


def held_out(name: str, work: Path) -> tuple[list[dict], object]:
    """The held-out half's questions of a set (each with what its measure reads) and the set's index."""
    aset = sets.load(name, work / "answer-sets")
    ix, _ = harness.indexed(aset.source, work / "indexes" / name)
    if name in ("german", "swedish"):
        return _labelled(name).questions, ix
    good, _ = aset.half("held_out")
    if name == "xquad":
        import train_query_encoder

        _, where = train_query_encoder._xquad_rows()
        return [q | {"doc": where[q["id"]]} for q in good], ix
    return [q | {"doc": q["group"]} for q in good], ix


def per_question(name: str, ix, questions: list[dict], choice: str) -> tuple[np.ndarray, np.ndarray]:
    """Each question's measure with ``choice`` of query encoder: (top-1 or nDCG@10, top-3 or recall@10)."""
    cfg = QueryConfig(k=10, log=False, query_encoder=choice)
    first, second = [], []
    if name in ("german", "swedish"):
        labelled = _labelled(name)
        for q in questions:
            passages = ix.query(q["query"], cfg).passages
            rank = next((p.rank for p in passages if labelled.gold(q, p)), None)
            first.append(float(rank == 1))
            second.append(float(rank is not None and rank <= 3))
    else:
        from dataclasses import replace

        for q in questions:
            hits, _, _ = ix.retrieve(q["query"], replace(cfg, k=100))
            ranked = documents_of(hits, 100)
            first.append(ndcg_at(ranked, {q["doc"]: 1}, 10))
            second.append(float(q["doc"] in ranked[:10]))
    return np.array(first), np.array(second)


def guard(measures: dict[str, dict[str, np.ndarray]]) -> dict[str, dict]:
    """The rule of the module docstring: per language, its statistic's 2.5th / 97.5th percentiles, each set's
    mean difference and 2.5th percentile, and the verdict."""
    rng = np.random.default_rng(SEED)
    out = {}
    for language in sorted(set(SETS.values())):
        names = [n for n, lang in SETS.items() if lang == language and n in measures]
        boots, rows = [], {}
        for name in names:
            d = measures[name]["ragkit"] - measures[name]["original"]
            idx = rng.integers(0, len(d), size=(RESAMPLES, len(d)))
            b = d[idx].mean(axis=1)
            boots.append(b)
            rows[name] = {
                "n": len(d),
                "mean": round(float(d.mean()), 4),
                "p2.5": round(float(np.percentile(b, 2.5)), 4),
            }
        stat = np.mean(boots, axis=0)
        low, high = float(np.percentile(stat, 2.5)), float(np.percentile(stat, 97.5))
        wins = low > 0 and all(r["p2.5"] >= -0.02 for r in rows.values())
        out[language] = {"sets": rows, "p2.5": round(low, 4), "p97.5": round(high, 4), "default": wins}
    return out


def _encode_p50(ix, texts: list[str], choice: str, language: str) -> float:
    embedder = ix.reader.query_embedder(choice, language)
    embedder.encode_query("warm up")
    ms = []
    for t in texts:
        start = time.perf_counter()
        embedder.encode_query(t)
        ms.append((time.perf_counter() - start) * 1000)
    return statistics.median(ms)


def measure_all(work: Path) -> tuple[dict, dict, dict]:
    measures: dict[str, dict[str, np.ndarray]] = {}
    extra: dict[str, dict[str, np.ndarray]] = {}
    indexes = {}
    for name in SETS:
        questions, ix = held_out(name, work)
        indexes[name] = (ix, questions)
        measures[name], extra[name] = {}, {}
        for choice in CHOICES:
            first, second = per_question(name, ix, questions, choice)
            measures[name][choice], extra[name][choice] = first, second
    return measures, extra, indexes


@cli.command("guard", WORK, arg("--write", action="store_true", help="record the verdict in the card"))
def guard_cmd(args) -> None:
    """The held-out guard (the module docstring's rule) per language; ``--write``: the card's ``on_by_default``."""
    measures, _, _ = measure_all(args.work)
    verdict = guard(measures)
    _print_guard(verdict)
    if args.write:
        _write(verdict)


def _print_guard(verdict: dict) -> None:
    rows = []
    for language, v in verdict.items():
        for name, r in v["sets"].items():
            rows.append([language, name, r["n"], f"{r['mean']:+.4f}", f"{r['p2.5']:+.4f}", "", ""])
        rows.append([language, "(pooled)", "", "", f"{v['p2.5']:+.4f}", f"{v['p97.5']:+.4f}",
                     "ragkit" if v["default"] else "original"])  # fmt: skip
    print_table("the held-out guard: ragkit − original, paired bootstrap", ["language", "set", "n", "mean",
                "2.5 %", "97.5 %", "default"], rows,
                notes=[f"{RESAMPLES:,} resamples, seed {SEED}; top-1 (gate sets) or nDCG@10 (xquad, swequad)"])  # fmt: skip


def _write(verdict: dict) -> None:
    card = json.loads(CARD.read_text())
    card["on_by_default"] = sorted(lang for lang, v in verdict.items() if v["default"])
    card["guard"] = {"rule": "scripts/bench_query_encoder.py (module docstring)", "verdict": verdict}
    CARD.write_text(json.dumps(card, ensure_ascii=False, indent=1) + "\n")
    print(f"on_by_default = {card['on_by_default']} -> {CARD}")


def index_bytes(folder: Path) -> str:
    """One digest of every file of an index folder (names and bytes): a query must leave it as it was."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


ENGLISH = [  # questions over the bundled sample (an English MiniLM index)
    "how many hours of overtime are allowed per week?",
    "what do I do when a production service is degraded?",
    "who approves expenses?",
    "how long do I have to submit a receipt?",
    "can I work from home?",
    "when are salaries paid?",
    "what is the on-call rotation?",
    "how do I report a security incident?",
]


def english_untouched(work: Path) -> tuple[int, int]:
    """Of the English questions over the bundled sample (MiniLM), how many get the same passages (ids and
    scores) with ``query_encoder`` auto as with original."""
    ix, _ = harness.indexed(harness.REPO / "ragkit" / "samples" / "handbook", work / "indexes" / "sample")
    same = 0
    for text in ENGLISH:
        got = [[(p.chunk_ids, p.score) for p in ix.query(text, QueryConfig(k=5, log=False,
               query_encoder=choice)).passages] for choice in ("auto", "original")]  # fmt: skip
        same += got[0] == got[1]
    return same, len(ENGLISH)


@cli.command(
    "report",
    WORK,
    arg("--answers", action="store_true", help="also the extractive answers of each held-out half (slow)"),
    arg("--write", action="store_true", help="record the guard's verdict in the card"),
)
def report(args) -> None:
    """Original against ragkit on every held-out half: one table, then the guard's."""
    folders = {name: args.work / "indexes" / name for name in SETS}
    before = {name: index_bytes(f) for name, f in folders.items() if f.is_dir()}
    measures, extra, indexes = measure_all(args.work)
    before |= {name: index_bytes(f) for name, f in folders.items() if name not in before}  # indexed just now
    rows = []
    for name in SETS:
        m, s = measures[name], extra[name]
        first = "top-1" if name in ("german", "swedish") else "nDCG@10"
        second = "top-3" if name in ("german", "swedish") else "recall@10"
        for label, data in ((first, m), (second, s)):
            o, r = data["original"].mean(), data["ragkit"].mean()
            rows.append([name, label, len(data["original"]), f"{o:.4f}", f"{r:.4f}", f"{r - o:+.4f}"])
    for name, lang in (("german", "de"), ("swedish", "sv")):
        ix, questions = indexes[name]
        texts = [q["query"] for q in questions]
        o, r = _encode_p50(ix, texts, "original", lang), _encode_p50(ix, texts, "ragkit", lang)
        rows.append([name, "encode p50 ms", len(texts), f"{o:.2f}", f"{r:.2f}", f"{r / o:.2f}×"])
    if args.answers:
        for name in SETS:
            aset = sets.load(name, args.work / "answer-sets")
            good, bad = aset.half("held_out")
            ix, _ = indexes[name]
            for choice in CHOICES:
                a = sets.answer_measures(ix, good, bad, settings={"query_encoder": choice, "log": False})
                measures.setdefault(f"answers-{name}", {})[choice] = a
            o, r = measures[f"answers-{name}"]["original"], measures[f"answers-{name}"]["ragkit"]
            rows.append([name, "answer contained", o["n"], f"{o['contained']:.4f}", f"{r['contained']:.4f}",
                         f"{r['contained'] - o['contained']:+.4f}"])  # fmt: skip
            rows.append([name, "answerable abstained", o["n"], f"{1 - o['answered']:.4f}", f"{1 - r['answered']:.4f}",
                         f"{o['answered'] - r['answered']:+.4f}"])  # fmt: skip
            if bad:
                rows.append([name, "absent abstained", o["n_absent"], f"{o['abstain_absent']:.4f}",
                             f"{r['abstain_absent']:.4f}", f"{r['abstain_absent'] - o['abstain_absent']:+.4f}"])  # fmt: skip
    same = sum(index_bytes(folders[name]) == digest for name, digest in before.items())
    rows.append(["(every index)", "bytes unchanged by the queries", len(before), "", f"{same} / {len(before)}", ""])
    kept, asked = english_untouched(args.work)
    rows.append(["sample (English, MiniLM)", "same passages, auto vs original", asked, "", f"{kept} / {asked}", ""])
    print_table("query encoders on the held-out halves (strategy auto)", ["set", "measure", "n", "original",
                "ragkit", "difference"], rows, notes=["ragkit: the shipped int8 graph (ragkit/embed/e5_query)"])  # fmt: skip
    verdict = guard({n: measures[n] for n in SETS})
    _print_guard(verdict)
    if args.write:
        _write(verdict)


@cli.command("scorer", WORK)
def scorer_cmd(args) -> None:
    """Which question vector the answer scorer reads when ragkit's query encoder read the question, on the FIT
    halves of the German and Swedish answer sets (the scorer was fitted on them, with e5's own vectors): e5's own
    (what ragkit does: one more encoding of the question) or ragkit's, the plan's. The passages are the same in
    both: ragkit's query encoder's."""
    rows = []
    for name, language in (("german", "de"), ("swedish", "sv")):
        aset = sets.load(name, args.work / "answer-sets")
        good, bad = aset.half("fit")
        ix, _ = harness.indexed(aset.source, args.work / "indexes" / name)
        cfg = QueryConfig(k=10, answer=True, answer_mode="extract", log=False, query_encoder="ragkit")
        counts = {"own": [0, 0, 0], "new": [0, 0, 0]}  # contained, answered, absent abstained
        for q in good + bad:
            result = ix.query(q["query"], cfg)
            answers = {"own": ix.answer_for(result, cfg).answer}
            result.plan.notes.pop("query_encoder")  # unnamed, the plan's vector (ragkit's) is what the scorer reads
            answers["new"] = ix.answer_for(result, cfg).answer
            for key, a in answers.items():
                if q in bad:
                    counts[key][2] += a.abstained
                else:
                    counts[key][0] += sets.norm(q["answer"]) in sets.norm(a.text)
                    counts[key][1] += not a.abstained
        for key, (contained, answered, absent) in counts.items():
            rows.append([name, language, key, len(good), f"{contained / len(good):.4f}",
                         f"{1 - answered / len(good):.4f}", len(bad), f"{absent / max(len(bad), 1):.4f}"])  # fmt: skip
    print_table("the answer scorer's question vector (fit halves; passages by ragkit's query encoder)",
                ["set", "language", "scorer reads", "n", "contained", "answerable abstained", "absent",
                 "absent abstained"], rows,
                notes=["own: e5's own, as the scorer was fitted (ragkit's choice); new: ragkit's"])  # fmt: skip


if __name__ == "__main__":
    cli.main()
