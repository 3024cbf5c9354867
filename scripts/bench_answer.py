#!/usr/bin/env python
"""Answers from a GGUF model: generation speed, and answer quality on questions with gold answers.

    python scripts/bench_answer.py SUBCOMMAND [options]     (SUBCOMMAND --help for its options)

Subcommands:
  answer  prompt and generation tokens/s, time to first token, end-to-end seconds per question
  eval    gold answer found with and without retrieved sources, citation validity (hotpotqa-100)
  trust   answers you can trust, one table for English, German and Swedish: gold answer contained, abstention
          on answerable and unanswerable questions, supported sentences, the cited page, and the answer step's
          cost, for the answer before issue 33 (written, unchecked) and now (extract; generate + check)
  units   the answer step with each unit encoded for every question vs remembered per reader (side by side in
          one run, a fresh reader each): seconds and the figures, which must not move
  plain   the team's plain questions (tests/data/plain_questions.jsonl: the bundled sample, the German laws, the
          Swedish regulations): answered right (a quote holding the written answer), abstained, per corpus, and
          each miss with what the answer said

Every subcommand also takes ``--json`` (each table as one JSON object per line).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path

import harness
from harness import arg, print_table, query_config

from ragkit.answer import Evidence, idf_of, verify
from ragkit.generate import load_generator
from ragkit.text import query_language

cli = harness.CLI(__doc__)
quality = harness.tests_module("quality")  # the answer sets and their measures, shared with the quality gate
answer_sets = harness.tests_module("answer_sets")
MODEL = arg("--model", help="a GGUF file (default: the bundled gemma-3-270m)")


@cli.command(
    "answer",
    arg("--index", required=True),
    MODEL,
    arg("--queries", type=Path),
    arg("--n", type=int, default=5),
    arg("--k", type=int, default=5),
    arg("--max-tokens", type=int, default=128),
)
def answer(args) -> None:
    """Answer generation speed of a GGUF model: prompt and generation tokens/s, time to first token, end-to-end.

        python scripts/bench_answer.py answer --index <index> [--model FILE.gguf] [--queries Q.jsonl] [--n 5]
            [--k 5] [--max-tokens 128]

    For each query (the first N of a BEIR queries.jsonl, or a built-in question), retrieves k passages and
    writes an answer with streaming, then prints a table: prompt tokens, time to first token (≈ prompt
    processing), prompt tokens/s, completion tokens, generation tokens/s, end-to-end seconds (retrieval +
    answer). The model is loaded once before timing.
    """
    texts = harness.query_texts(args.queries, args.n) if args.queries else ["how is overtime limited?"]
    cfg = query_config(k=args.k, strategy="hybrid", model=args.model, max_tokens=args.max_tokens, temperature=0.0,
                       answer_mode="generate")  # fmt: skip
    gen = load_generator(args.model, n_ctx=cfg.answer_context)
    ix = harness.open_index(args.index, generator=gen)
    ix.query("warm up", cfg)
    rows, figures = [], []
    for text in texts:
        t = time.perf_counter()
        a = _answer(ix, ix.query(text, cfg), cfg)
        total = time.perf_counter() - t
        ttft = a.first_token_seconds or a.seconds
        figures.append((a.prompt_tokens / ttft, a.tokens_per_second, ttft, total))
        rows.append(
            (
                text[:40],
                a.prompt_tokens,
                f"{ttft:.2f}",
                f"{a.prompt_tokens / ttft:.0f}",
                a.completion_tokens,
                f"{a.tokens_per_second:.1f}",
                f"{total:.2f}",
            )
        )
    med = [statistics.median(col) for col in zip(*figures)]
    rows.append(("median", "", f"{med[2]:.2f}", f"{med[0]:.0f}", "", f"{med[1]:.1f}", f"{med[3]:.2f}"))
    cols = ("query", "prompt tok", "first token s", "prompt tok/s", "answer tok", "gen tok/s", "end-to-end s")
    print_table(f"{gen.name}: answers from {args.k} passages, max {args.max_tokens} tokens", cols, rows, width=140)


@cli.command(
    "eval",
    arg("dataset", type=Path),
    arg("--index", required=True),
    arg("--n", type=int, default=100),
    arg("--k", type=int, default=5),
    MODEL,
)
def evaluate(args) -> None:
    """Answer quality on questions with gold answers (hotpotqa-100): grounded vs. ungrounded, citation validity.

        python scripts/bench_answer.py eval ../shared/data/hotpotqa-100 --index <index> [--n 100] [--k 5]
            [--model FILE.gguf]

    For each judged query that carries an ``answer``, writes an answer from the top k passages (hybrid) and
    one without any source, and counts how often the gold answer string appears in each (case-insensitive).
    A citation [n] is valid when most content words of the sentence that carries it (at least half) appear in
    the cited passage.
    """
    from ragkit.answer import answer as write

    with (args.dataset / "queries.jsonl").open() as fh:
        queries = [q for q in (json.loads(line) for line in fh if line.strip()) if q.get("answer")][: args.n]
    ix = harness.open_index(args.index)
    cfg = query_config(strategy="hybrid", k=args.k, model=args.model, max_tokens=96, temperature=0.0)
    gen = load_generator(args.model, n_ctx=cfg.answer_context)
    hit_ctx = hit_none = dropped = 0
    checks: list[bool] = []
    for q in queries:
        gold = quality.norm(str(q["answer"]))
        result = ix.query(q["text"], cfg)
        a = write(gen, q["text"], result.passages, cfg.max_tokens, cfg.temperature)
        hit_ctx += gold in quality.norm(a.text)
        checks += citation_checks(a, result.passages)
        dropped += a.dropped_citations
        bare = write(gen, q["text"], [], cfg.max_tokens, cfg.temperature)
        hit_none += gold in quality.norm(bare.text)
    n = len(queries)
    rows = [
        ("gold answer in the answer, with retrieved sources", f"{hit_ctx / n:.1%} ({hit_ctx})"),
        ("gold answer in the answer, without sources", f"{hit_none / n:.1%} ({hit_none})"),
        (
            "citations kept / valid (sentence terms in the cited passage)",
            f"{len(checks)} / {sum(checks) / len(checks):.1%}" if checks else "0 / –",
        ),
        ("citations dropped (named no source)", dropped),
    ]
    title = f"{args.dataset.name}: {n} questions, {gen.name}, hybrid top {args.k}"
    print_table(title, ("measure", "value"), rows, width=120)


def _answer(ix, result, cfg):
    """The answer to ``result`` (``Index.answer_for``); the error that kept it from being written is raised."""
    answered = ix.answer_for(result, cfg)
    if answered.answer is None:
        raise answered.error
    return answered.answer


# the prompt before issue 33 (its worked example leaked into answers), kept to measure "before" in the same run
OLD_PROMPT = """Answer the question using only the numbered sources. After each fact, cite its source as [n]. \
If the sources do not contain the answer, say that they do not.

Sources:
[1] Eiffel Tower (landmarks.md:1-3)
The Eiffel Tower in Paris was completed in 1889 for the World's Fair.

[2] Gustave Eiffel (people.md:4-6)
Gustave Eiffel's engineering company designed and built the tower.

Question: Who built the Eiffel Tower, and when was it finished?
Answer: According to [2], Gustave Eiffel's company built the Eiffel Tower. According to [1], it was completed in 1889.

Sources:
{sources}
{notes}
Question: {question}
Answer:"""


def _before(gen, result, cfg):
    """The answer as ``--answer`` wrote it before issue 33: the old prompt, English lead words, no check."""
    from ragkit.answer import generated

    prompt, prefixes = generated.PROMPT, dict(generated.PREFIXES)
    generated.PROMPT, generated.PREFIXES = OLD_PROMPT, {k: generated.PREFIXES["en"] for k in prefixes}
    try:
        return generated.answer(gen, result.query, result.passages, cfg.max_tokens, cfg.temperature)
    finally:
        generated.PROMPT, generated.PREFIXES = prompt, prefixes


@cli.command(
    "trust",
    arg("--sets", default="hotpotqa,german,swedish"),
    arg("--n", type=int, default=None, help="questions per set and kind (default: all)"),
    arg("--k", type=int, default=5),
    arg("--modes", default="before,extract,generate", help="before (written, unchecked), extract, generate"),
    arg("--work", type=Path, default=None),
)
def trust(args) -> None:
    """Gold answer contained (and its ceiling: the gold string in the top k passages), abstention on
    answerable questions, on questions about topics absent from the documents and on questions whose entities
    the documents hold but not the asked fact; the share of the answer's sentences that what they cite
    supports ("answer supported": quotes count as supported, a checked answer shows only supported sentences),
    the share of the model's own sentences supported as cited ("model as cited", before the check), how often
    the written answer was replaced by the quotes, the right page (Swedish), and the answer step's warm
    milliseconds (and of the check alone), per set and mode, in one run. Modes: "before" is the answer as ``--answer`` wrote it
    before issue 33 (the bundled model, the old prompt, no check); "extract" quotes the sources; "generate" is
    the bundled model's answer checked sentence by sentence (replaced by the quotes under half supported)."""
    work = harness.workdir(args.work, "trust")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    gen = load_generator(None, n_ctx=4096) if {"before", "generate"} & set(modes) else None
    rows = []
    for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
        aset = quality.answer_set(name, work / "corpora")
        ix, _ = harness.indexed(aset.source, work / name, generator=gen)
        good, bad = aset.half("held_out")
        good, bad = good[: args.n], bad[: args.n]
        for mode in modes:
            rows.append([name, mode, *_measure(ix, good, bad, mode, gen, args.k)])
    print_table(
        "answers you can trust",
        [
            "set",
            "mode",
            "contained",
            "ceiling",
            "abstain (answerable)",
            "abstain (absent topic)",
            "abstain (fact missing)",
            "answer supported",
            "model as cited",
            "replaced",
            "page right",
            "answer ms p50",
            "check ms p50",
        ],
        rows,
        width=200,
        left=["set", "mode"],
    )


def _measure(ix, good, bad, mode, gen, k) -> list[str]:
    """One row: the figures of one mode over a set's answerable (``good``) and unanswerable (``bad``) questions.
    Unanswerable questions whose entities the documents hold but not the asked fact (``entities_in_corpus``,
    hotpotqa) are counted apart from those on topics absent from the documents."""
    cfg = query_config(
        strategy="auto",
        k=k,
        answer=True,
        answer_mode="extract" if mode == "extract" else "generate",
        max_tokens=96,
        temperature=0.0,
    )
    reader = ix.reader
    idf = idf_of(reader.vocabulary, reader.manifest.counts.chunks)
    contained = ceiling = abstained_good = page_right = 0
    absent = present = abstained_absent = abstained_present = 0
    shown = shown_supported = written = written_as_cited = replaced = 0
    times, checks = [], []
    for q in good + bad:
        result = ix.query(q["query"], cfg)
        t = time.perf_counter()
        if mode == "before":
            a = _before(gen, result, cfg)
        else:
            a = _answer(ix, result, cfg)
        times.append((time.perf_counter() - t) * 1000)
        if a.check_ms is not None:
            checks.append(a.check_ms)
        if mode == "before":  # measured, not changed: how many of its sentences what they cite supports
            language = query_language(result.query)
            claims = verify(a, Evidence.of(result), idf, language, reader.embedder).claims
            a.claims = claims
        if q in bad:
            if q.get("entities_in_corpus"):
                present += 1
                abstained_present += a.abstained
            else:
                absent += 1
                abstained_absent += a.abstained
            continue
        gold = quality.norm(str(q["answer"]))
        contained += gold in quality.norm(a.text)
        ceiling += any(gold in quality.norm(p.text) for p in result.passages)
        abstained_good += a.abstained
        page_right += "pages" in q and answer_sets.page_right(q, a)
        replaced += a.replaced
        as_cited = [c.supported and not c.repointed for c in a.claims]
        written += len(as_cited)
        written_as_cited += sum(as_cited)
        if mode == "before":
            shown += len(as_cited)
            shown_supported += sum(as_cited)
        elif not a.abstained:  # what the answer shows: the quotes, or the checked sentences it kept
            kept = len(a.quotes) if (a.mode == "extract" or a.replaced) else sum(c.supported for c in a.claims)
            shown += kept
            shown_supported += kept
    n = len(good)
    pages = f"{page_right / n:.2f}" if n and "pages" in good[0] else "–"
    return [
        f"{contained / n:.2f} ({n})",
        f"{ceiling / n:.2f}",
        f"{abstained_good / n:.2f}",
        f"{abstained_absent / absent:.2f} ({absent})" if absent else "–",
        f"{abstained_present / present:.2f} ({present})" if present else "–",
        f"{shown_supported / shown:.2f} ({shown})" if shown else "–",
        f"{written_as_cited / written:.2f} ({written})" if written else "–",
        f"{replaced / n:.2f}" if mode == "generate" else "–",
        pages,
        f"{statistics.median(times):.1f}",
        f"{statistics.median(checks):.1f}" if checks else "–",
    ]


@cli.command(
    "units",
    arg("--set", default="xquad", help="an answer set: german, swedish, hotpotqa, xquad, swequad"),
    arg("--work", type=Path, default=None, help="the set's corpus and index (kept)"),
)
def units(args) -> None:
    """The held-out half answered twice, each unit encoded for every question ("plain") and its vector
    remembered by the reader (ragkit/embed/remembered.py, the default): seconds, contained, answered.
    ("plain" puts the bare encoder in the reader's memo of unit vectors, "unit_vectors", before the first answer:
    the library has no switch for it.)"""
    quality = harness.tests_module("quality")
    work = harness.workdir(args.work, "units")
    aset = quality.answer_set(args.set, work)
    if not (work / "index" / "manifest.json").exists():
        harness.index_into([aset.source], work / "index")
    good, bad = quality.answer_questions(args.set)
    rows = []
    for label in ("plain", "remembered"):
        ix = harness.open_index(work / "index")  # a fresh reader each
        ix.reader.embedder.encode_query("warm up")
        if label == "plain":
            ix.reader.memo("unit_vectors", lambda encode=ix.reader.embedder.encode: encode)
        t = time.perf_counter()
        m = quality.answer_eval(ix, good, bad)
        rows.append([label, f"{time.perf_counter() - t:.1f}", f"{m['contained']:.4f}", f"{m['answered']:.4f}"])
    print_table(f"answer units encoded, {args.set} held-out half ({len(good)} + {len(bad)} questions)",
                ["units", "seconds", "contained", "answered"], rows)  # fmt: skip


def citation_checks(a, passages) -> list[bool]:
    """One verdict per citation mark: the cited passage holds at least half the sentence's content words."""
    from ragkit.text import content_words

    by_rank = {p.rank: p for p in passages}
    source_rank = dict(enumerate(a.sources, start=1))
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+", a.text):
        words = set(content_words(re.sub(r"\[[\d,\s]+\]", " ", sentence)))
        for mark in re.findall(r"\[([\d,\s]+)\]", sentence):
            for n in (int(x) for x in re.split(r"\s*,\s*", mark.strip()) if x):
                p = by_rank.get(source_rank.get(n))
                held = set(content_words(p.text)) if p else set()
                out.append(bool(words) and len(words & held) >= len(words) / 2)
    return out


PLAIN = {  # the plain questions' corpora: what the gate indexes for each
    "sample": harness.REPO / "ragkit" / "samples" / "handbook",
    "german-laws": quality.GERMAN_LAWS,
    "swedish": quality.SWEDISH_REGULATIONS,
}


@cli.command(
    "plain",
    arg("--corpora", default=",".join(PLAIN), help="sample, german-laws, swedish"),
    arg("--work", type=Path, default=None, help="the corpora's indexes (kept, reused when unchanged)"),
)
def plain(args) -> None:
    """The plain questions as ``ragkit query --answer`` answers them (extractive, default settings; what the
    gate's ``[plain]`` floors hold): right, abstained, per corpus; then each miss and its answer."""
    from ragkit.config import QueryConfig

    work = harness.workdir(args.work, "plain")
    rows, misses = [], []
    for corpus in [c.strip() for c in args.corpora.split(",") if c.strip()]:
        if not PLAIN[corpus].exists():
            print(f"skipping {corpus}: {PLAIN[corpus]} is absent")
            continue
        ix, _ = harness.indexed(PLAIN[corpus], work / corpus)
        questions = quality.plain_questions(corpus)
        right = set(quality.plain_right(ix, questions))
        abstained = 0
        for q in questions:
            if q["id"] in right:
                continue
            a = ix.ask(q["query"], QueryConfig(answer=True, answer_mode="extract", log=False)).answer
            abstained += a is None or a.abstained
            misses.append((corpus, q["query"][:60], q["answer"][:40], (a.text if a else "–")[:90]))
        n = len(questions)
        rows.append((corpus, n, f"{len(right) / n:.4f}", f"{abstained / n:.4f}"))
    print_table("plain questions answered right", ("corpus", "questions", "right", "abstained"), rows)
    print_table("misses", ("corpus", "question", "written answer", "ragkit's answer"), misses, width=220)


if __name__ == "__main__":
    cli.main()
