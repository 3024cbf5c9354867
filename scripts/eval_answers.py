#!/usr/bin/env python
"""Answer quality on questions with gold answers (hotpotqa-100): grounded vs. ungrounded, citation validity.

    python scripts/eval_answers.py ../shared/data/hotpotqa-100 --index <index> [--n 100] [--k 5] [--model FILE.gguf]

For each judged query that carries an ``answer``, writes an answer from the top k passages (hybrid) and
one without any source, and counts how often the gold answer string appears in each (case-insensitive).
A citation [n] is valid when most content words of the sentence that carries it (at least half) appear in
the cited passage.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from ragkit.answer import answer  # noqa: E402
from ragkit.config import QueryConfig  # noqa: E402
from ragkit.generate import load_generator  # noqa: E402
from ragkit.text import content_words  # noqa: E402


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def citation_checks(a, passages) -> list[bool]:
    """One verdict per citation mark: the cited passage holds at least half the sentence's content words."""
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--index", required=True)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--model", default=None)
    args = ap.parse_args()
    with (args.dataset / "queries.jsonl").open() as fh:
        queries = [q for q in (json.loads(line) for line in fh if line.strip()) if q.get("answer")][: args.n]
    reader = api.open_index(args.index)
    cfg = QueryConfig(strategy="hybrid", k=args.k, model=args.model, max_tokens=96, temperature=0.0)
    gen = load_generator(args.model, n_ctx=cfg.answer_context)
    hit_ctx = hit_none = 0
    checks: list[bool] = []
    dropped = 0
    for q in queries:
        gold = _norm(str(q["answer"]))
        result = api.query(reader, q["text"], cfg)
        a = answer(gen, q["text"], result.passages, cfg.max_tokens, cfg.temperature)
        hit_ctx += gold in _norm(a.text)
        checks += citation_checks(a, result.passages)
        dropped += a.dropped_citations
        bare = answer(gen, q["text"], [], cfg.max_tokens, cfg.temperature)
        hit_none += gold in _norm(bare.text)
    n = len(queries)
    tab = Table(title=f"{args.dataset.name}: {n} questions, {gen.name}, hybrid top {args.k}")
    tab.add_column("measure")
    tab.add_column("value", justify="right")
    tab.add_row("gold answer in the answer, with retrieved sources", f"{hit_ctx / n:.1%} ({hit_ctx})")
    tab.add_row("gold answer in the answer, without sources", f"{hit_none / n:.1%} ({hit_none})")
    tab.add_row(
        "citations kept / valid (sentence terms in the cited passage)",
        f"{len(checks)} / {sum(checks) / len(checks):.1%}" if checks else "0 / –",
    )
    tab.add_row("citations dropped (named no source)", str(dropped))
    Console(width=120).print(tab)


if __name__ == "__main__":
    main()
