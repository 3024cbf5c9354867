#!/usr/bin/env python
"""Answer generation speed of a GGUF model: prompt and generation tokens/s, time to first token, end-to-end.

    python scripts/bench_answer.py --index <index> [--model FILE.gguf] [--queries Q.jsonl] [--n 5] [--k 5]

For each query (the first N of a BEIR queries.jsonl, or a built-in question), retrieves k passages and
writes an answer with streaming, then prints a table: prompt tokens, time to first token (≈ prompt
processing), prompt tokens/s, completion tokens, generation tokens/s, end-to-end seconds (retrieval +
answer). The model is loaded once before timing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from ragkit.config import QueryConfig  # noqa: E402
from ragkit.generate import load_generator  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--model", default=None)
    ap.add_argument("--queries", type=Path, default=None)
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=128)
    args = ap.parse_args()
    texts = ["how is overtime limited?"]
    if args.queries:
        with args.queries.open() as fh:
            texts = [json.loads(line)["text"] for line in fh if line.strip()][: args.n]
    reader = api.open_index(args.index)
    cfg = QueryConfig(k=args.k, strategy="hybrid", model=args.model, max_tokens=args.max_tokens, temperature=0.0)
    gen = load_generator(args.model, n_ctx=cfg.answer_context)
    api.query(reader, "warm up", cfg)
    tab = Table(title=f"{gen.name}: answers from {args.k} passages, max {args.max_tokens} tokens")
    for col in ("query", "prompt tok", "first token s", "prompt tok/s", "answer tok", "gen tok/s", "end-to-end s"):
        tab.add_column(col, justify="left" if col == "query" else "right")
    rows = []
    for text in texts:
        t = time.perf_counter()
        result = api.query(reader, text, cfg)
        a = api.answer(result, cfg)
        total = time.perf_counter() - t
        ttft = a.first_token_seconds or a.seconds
        rows.append((a.prompt_tokens / ttft, a.tokens_per_second, ttft, total))
        tab.add_row(
            text[:40],
            str(a.prompt_tokens),
            f"{ttft:.2f}",
            f"{a.prompt_tokens / ttft:.0f}",
            str(a.completion_tokens),
            f"{a.tokens_per_second:.1f}",
            f"{total:.2f}",
        )
    med = [statistics.median(col) for col in zip(*rows)]
    tab.add_row("median", "", f"{med[2]:.2f}", f"{med[0]:.0f}", "", f"{med[1]:.1f}", f"{med[3]:.2f}")
    Console(width=140).print(tab)


if __name__ == "__main__":
    main()
