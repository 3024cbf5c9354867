#!/usr/bin/env python
"""Answers from a GGUF model: generation speed, and answer quality on questions with gold answers.

    python scripts/bench_answer.py SUBCOMMAND [options]     (SUBCOMMAND --help for its options)

Subcommands:
  answer  prompt and generation tokens/s, time to first token, end-to-end seconds per question
  eval    gold answer found with and without retrieved sources, citation validity (hotpotqa-100)

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

from ragkit import api
from ragkit.generate import load_generator

cli = harness.CLI(__doc__)
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
    reader = api.open_index(args.index)
    cfg = query_config(k=args.k, strategy="hybrid", model=args.model, max_tokens=args.max_tokens, temperature=0.0)
    gen = load_generator(args.model, n_ctx=cfg.answer_context)
    api.query(reader, "warm up", cfg)
    rows, figures = [], []
    for text in texts:
        t = time.perf_counter()
        a = api.answer(api.query(reader, text, cfg), cfg)
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
    reader = api.open_index(args.index)
    cfg = query_config(strategy="hybrid", k=args.k, model=args.model, max_tokens=96, temperature=0.0)
    gen = load_generator(args.model, n_ctx=cfg.answer_context)
    hit_ctx = hit_none = dropped = 0
    checks: list[bool] = []
    for q in queries:
        gold = _norm(str(q["answer"]))
        result = api.query(reader, q["text"], cfg)
        a = write(gen, q["text"], result.passages, cfg.max_tokens, cfg.temperature)
        hit_ctx += gold in _norm(a.text)
        checks += citation_checks(a, result.passages)
        dropped += a.dropped_citations
        bare = write(gen, q["text"], [], cfg.max_tokens, cfg.temperature)
        hit_none += gold in _norm(bare.text)
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


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


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


if __name__ == "__main__":
    cli.main()
