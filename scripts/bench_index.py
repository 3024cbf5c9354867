#!/usr/bin/env python
"""Indexing throughput against the raw encoder, side by side in one run.

    python scripts/bench_index.py [--corpus ../shared/data/scifact-train/corpus.jsonl] [--docs 1000]

Indexes the first N documents of a BEIR corpus (or a folder) with ragkit, then
encodes exactly the same chunk texts with the bare sentence-transformers model,
and re-indexes the unchanged input. Prints a table: chunks/s of both, their
ratio (the target is ragkit ≥ 0.8× the raw encoder) and the unchanged re-run as
a fraction of the first run (target < 10%).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from benchlib import corpus_source  # noqa: E402
from ragkit import api  # noqa: E402
from ragkit.config import IndexConfig  # noqa: E402
from ragkit.embed import load_embedder  # noqa: E402

DEFAULT = Path(__file__).resolve().parent.parent.parent / "shared/data/scifact-train/corpus.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT, help="BEIR corpus.jsonl or a folder")
    ap.add_argument("--docs", type=int, default=1000, help="first N lines of a corpus.jsonl")
    args = ap.parse_args()
    if not args.corpus.exists():
        sys.exit(f"{args.corpus} not found (the shared data sets live in ../shared/data)")
    work = Path(tempfile.mkdtemp(prefix="ragkit-bench-"))
    try:
        src = corpus_source(args.corpus, args.docs, work)
        cfg = IndexConfig()
        t = time.perf_counter()
        emb = load_embedder(cfg.embed_model, cfg.embed_batch_size)
        load_s = time.perf_counter() - t
        emb.encode(["warm up the model"] * 8)

        t = time.perf_counter()
        first = api.index([src], work / "idx", cfg, embedder_factory=lambda c: emb)
        index_s = time.perf_counter() - t

        reader = api.open_index(work / "idx", embedder=emb)
        with reader.duck() as store:
            texts = [f"{h}\n{x}" if h else x for h, x in
                     store.con.execute("SELECT header, text FROM chunks ORDER BY document_id, chunk_index").fetchall()]
        t = time.perf_counter()
        emb.model.encode(texts, batch_size=cfg.embed_batch_size, normalize_embeddings=True, show_progress_bar=False)
        raw_s = time.perf_counter() - t

        t = time.perf_counter()
        second = api.index([src], work / "idx", cfg, embedder_factory=lambda c: emb)
        rerun_s = time.perf_counter() - t
        assert second.unchanged and not second.new and not second.changed

        n = len(texts)
        tab = Table(title=f"indexing {first.documents} documents → {n} chunks ({src.name})")
        for col in ("measure", "seconds", "chunks/s", "note"):
            tab.add_column(col, justify="right" if col != "note" else "left")
        tab.add_row("raw encoder (same chunk texts)", f"{raw_s:.2f}", f"{n / raw_s:.1f}", "SentenceTransformer.encode")
        tab.add_row("ragkit index, first run", f"{index_s:.2f}", f"{n / index_s:.1f}",
                    "discover+parse+chunk+embed+LanceDB+FTS+DuckDB")
        tab.add_row("ratio ragkit / raw", "", f"{(n / index_s) / (n / raw_s):.2f}×", "target ≥ 0.80×")
        tab.add_row("ragkit index, unchanged re-run", f"{rerun_s:.3f}", "",
                    f"{100 * rerun_s / index_s:.1f}% of the first run (target < 10%)")
        tab.add_row("model load (not in the runs above)", f"{load_s:.2f}", "", "")
        stages = ", ".join(f"{k} {v:.2f}s" for k, v in first.seconds.items())
        Console(width=130).print(tab)
        Console(width=130).print(f"[dim]first run stages: {stages}[/]")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
