#!/usr/bin/env python
"""Passage quality and the cost of structure: coherence, length, reference hits, overhead.

    python scripts/bench_passages.py --index indexes/laws --index indexes/rust-book [--queries 100]
        [--legal tests/data/legal_ref_queries.jsonl]

Queries are section headings of each index (legal "§ n" prefixes stripped, so
they are topic questions). For each index it prints: share of multi-chunk
passages whose chunks are consecutive chunks of one section (checked on the
evidence graph), mean passage length in tokens and chunks, mean coherence, and
p50 times of hybrid retrieval vs. feature reranking + assembly (their ratio is
the overhead). With --legal, the hit rate of the hand-made reference queries
and the index's reference resolution counts.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from ragkit.assemble import assemble  # noqa: E402
from ragkit.config import QueryConfig  # noqa: E402
from ragkit.evaluate import percentile  # noqa: E402


def heading_queries(reader, n: int) -> list[str]:
    with reader.duck() as store:
        heads = [r["heading"] for r in store.rows("SELECT heading FROM sections WHERE level >= 2")]
    heads = [re.sub(r"^\s*(§+|Art\.?|Artikel)\s*\d+[a-z]?\s*", "", h).strip() for h in heads]
    heads = sorted({h for h in heads if len(h.split()) >= 2})
    random.Random(7).shuffle(heads)
    return heads[:n]


def adjacent_in_one_section(graph, chunk_ids: list[str]) -> bool:
    sections = {graph.get_section(c) for c in chunk_ids}
    return len(sections) == 1 and all(b in graph.get_adjacent(a) for a, b in zip(chunk_ids, chunk_ids[1:]))


def measure(index: str, n: int) -> dict:
    reader = api.open_index(index)
    reader.embedder.encode_query("warm up")
    graph = reader.graph
    queries = heading_queries(reader, n)
    base = QueryConfig(k=10)
    passages, t_retr, t_feat, t_asm = [], [], [], []
    for q in queries:
        t = time.perf_counter()
        api.retrieve(reader, q, replace(base, rerank="none"))
        t_retr.append(time.perf_counter() - t)
        hits, _, timings = api.retrieve(reader, q, base)
        t_feat.append(timings.get("rerank", 0.0) / 1000)
        t = time.perf_counter()
        ps = assemble(hits, base.k, base.budget)
        t_asm.append(time.perf_counter() - t)
        passages.extend(ps)
    multi = [p for p in passages if len(p.chunk_ids) > 1]
    ok = sum(adjacent_in_one_section(graph, p.chunk_ids) for p in multi)
    p50 = {
        name: percentile([x * 1000 for x in v], 0.5)
        for name, v in (("retrieval", t_retr), ("features", t_feat), ("assembly", t_asm))
    }
    return {
        "index": index,
        "queries": len(queries),
        "passages": len(passages),
        "multi": len(multi),
        "adjacent_share": ok / len(multi) if multi else 1.0,
        "tokens": statistics.fmean(p.token_count for p in passages),
        "chunks": statistics.fmean(len(p.chunk_ids) for p in passages),
        "coherence": statistics.fmean(p.coherence_score for p in multi) if multi else 1.0,
        **{f"p50_{k}": v for k, v in p50.items()},
    }


def legal(index: str, path: Path) -> dict:
    reader = api.open_index(index)
    qs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    hits = 0
    for q in qs:
        top = api.query(reader, q["query"], QueryConfig(k=3)).passages[0]
        expected = q["section"] if isinstance(q["section"], list) else [q["section"]]
        hits += top.section.split(" > ")[-1] in expected and q["law"] in top.path
    with reader.duck() as store:
        counts = store.rows(
            "SELECT count(*) AS detected, count(resolved_document_id) AS doc, "
            "count(resolved_section_id) AS sec FROM refs WHERE kind = 'law'"
        )[0]
        external = store.rows("SELECT count(*) AS n FROM refs WHERE kind = 'law' AND resolved_document_id IS NULL")[0]
    return {"queries": len(qs), "hits": hits, **counts, "unresolved": external["n"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", action="append", required=True)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--legal", type=Path, default=None, help="legal query set, run against the first index")
    args = ap.parse_args()
    console = Console(width=140)
    tab = Table(title="passages from section-heading queries (hybrid, features, k=10)")
    for col in (
        "index",
        "queries",
        "passages",
        "multi-chunk",
        "adjacent in one section",
        "mean tokens",
        "mean chunks",
        "mean coherence",
        "p50 retrieval ms",
        "p50 features ms",
        "p50 assembly ms",
        "overhead",
    ):
        tab.add_column(col, justify="right")
    for index in args.index:
        m = measure(index, args.queries)
        tab.add_row(
            Path(index).name,
            str(m["queries"]),
            str(m["passages"]),
            str(m["multi"]),
            f"{100 * m['adjacent_share']:.1f}%",
            f"{m['tokens']:.0f}",
            f"{m['chunks']:.2f}",
            f"{m['coherence']:.3f}",
            f"{m['p50_retrieval']:.1f}",
            f"{m['p50_features']:.1f}",
            f"{m['p50_assembly']:.2f}",
            f"{100 * (m['p50_features'] + m['p50_assembly']) / m['p50_retrieval']:.1f}%",
        )
    console.print(tab)
    if args.legal:
        r = legal(args.index[0], args.legal)
        console.print(
            f"legal references in {args.index[0]}: {r['detected']} detected, {r['doc']} resolved to a "
            f"document, {r['sec']} to a section, {r['unresolved']} unresolved (laws not indexed)"
        )
        console.print(
            f"hand-made reference queries: {r['hits']}/{r['queries']} return the cited section first "
            f"({100 * r['hits'] / r['queries']:.0f}%)"
        )


if __name__ == "__main__":
    main()
