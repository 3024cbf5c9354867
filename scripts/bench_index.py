#!/usr/bin/env python
"""Indexing throughput: the encoders side by side on the same chunks in one run, and ragkit's whole run.

    python scripts/bench_index.py [--corpus ../shared/data/scifact-train/corpus.jsonl] [--docs 1000]

Indexes the first N documents of a BEIR corpus (or a folder) with the default settings (the int8 ONNX
encoder), then encodes exactly the same chunk texts with each encoder and setting — the fp32 torch encoder
(sentence-transformers, as ragkit ran it before: batches of 32 on every core), the ONNX encoders one text per
run (how ragkit runs them) and in padded batches — and re-indexes the unchanged input. Prints chunks/s and
each encoder's speed relative to the fp32 torch encoder (the target for the default: ≥ 2×).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib import corpus_source  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from ragkit.config import IndexConfig  # noqa: E402
from ragkit.embed import load_embedder  # noqa: E402
from ragkit.ingest.source import model_for_paths  # noqa: E402

DEFAULT = Path(__file__).resolve().parent.parent.parent / "shared/data/scifact-train/corpus.jsonl"


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


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
        cfg = replace(cfg, embed_model=model_for_paths([src], cfg))  # the model the index run would choose
        emb = load_embedder(cfg.embed_model, cfg.embed_batch_size, cfg.encoder)
        emb.encode(["warm up the model"] * 8)
        index_s = timed(lambda: api.index([src], work / "idx", cfg, embedder_factory=lambda c: emb))
        first = api.index([src], work / "idx", cfg, embedder_factory=lambda c: emb)  # unchanged re-run
        rerun_s = first.seconds.get("total", 0.0)
        reader = api.open_index(work / "idx")
        with reader.duck() as store:
            texts = [
                f"{h}\n{x}" if h else x
                for h, x in store.con.execute(
                    "SELECT header, text FROM chunks ORDER BY document_id, chunk_index"
                ).fetchall()
            ]
        n = len(texts)
        torch_enc = load_embedder(cfg.embed_model, 32, "torch")
        onnx_enc, int8_enc = (
            load_embedder(cfg.embed_model, encoder="onnx"),
            load_embedder(cfg.embed_model, encoder="onnx-int8"),
        )
        for e in (torch_enc, onnx_enc, int8_enc):
            e.encode(texts[:16])
        rows = [
            (
                "torch fp32 (sentence-transformers)",
                "batches of 32, every core",
                timed(
                    lambda: torch_enc.model.encode(
                        texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False
                    )
                ),
            ),
            (
                "torch fp32 (sentence-transformers)",
                "batches of 8",
                timed(
                    lambda: torch_enc.model.encode(
                        texts, batch_size=8, normalize_embeddings=True, show_progress_bar=False
                    )
                ),
            ),
            ("ONNX fp32", "one text per run (ragkit)", timed(lambda: onnx_enc.encode(texts))),
            ("ONNX int8 (the default)", "one text per run (ragkit)", timed(lambda: int8_enc.encode(texts))),
            (
                "ONNX int8",
                "padded batches of 16",
                timed(
                    lambda: [int8_enc._vectors(int8_enc._session("batch"), texts[i : i + 16]) for i in range(0, n, 16)]
                ),
            ),
        ]
        base = rows[0][2]
        tab = Table(title=f"encoding the {n} chunks of {first.total_documents} documents ({src.name}), one run")
        for col in ("encoder", "setting", "seconds", "chunks/s", "× torch fp32"):
            tab.add_column(col, justify="left" if col in ("encoder", "setting") else "right")
        for name, setting, s in rows:
            tab.add_row(name, setting, f"{s:.2f}", f"{n / s:.1f}", f"{base / s:.2f}×")
        tab.add_row(
            "ragkit index, first run (default)",
            "discover … commit",
            f"{index_s:.2f}",
            f"{n / index_s:.1f}",
            f"{base / index_s:.2f}×",
        )
        tab.add_row("ragkit index, unchanged re-run", "", f"{rerun_s:.3f}", "", "")
        Console(width=130).print(tab)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
