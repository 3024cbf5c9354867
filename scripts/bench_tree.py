#!/usr/bin/env python
"""Summary-tree (RAPTOR-lite) build time and storage vs. the flat index, side by side in one run.

    python scripts/bench_tree.py ../shared/data/scifact-train/corpus.jsonl --docs 1000
    python scripts/bench_tree.py ../shared/data/rust-book/src

Indexes the same documents (a BEIR corpus.jsonl, first N documents, or a
folder) twice with one loaded model, ``tree = false`` and ``tree = true``
(entity extraction off in both, so only the tree differs), and prints index
time, the tree step's own time, nodes per level, on-disk size and the
overhead of the tree, plus the tree time scaled to 1,000 documents.
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


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", type=Path, help="a BEIR corpus.jsonl or a folder of documents")
    ap.add_argument("--docs", type=int, default=None, help="first N documents of a corpus.jsonl")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ragkit-tree-"))
    try:
        src = corpus_source(args.corpus, args.docs, work)
        cfg = replace(IndexConfig(), extract="none")
        cfg = replace(cfg, embed_model=model_for_paths([src], cfg))  # the model the index run would choose
        emb = load_embedder(cfg.embed_model, cfg.embed_batch_size, cfg.encoder)
        emb.encode(["warm up"] * 8)
        name = args.corpus.parent.name if args.corpus.is_file() else args.corpus.name
        tab = Table(title=f"{name}: index with and without the summary tree")
        for col in ("tree", "documents", "chunks", "seconds", "tree step s", "nodes L1 / L2", "size MB"):
            tab.add_column(col, justify="right")
        out = {}
        for tree in (False, True):
            t = time.perf_counter()
            s = api.index([src], work / str(tree), replace(cfg, tree=tree), embedder_factory=lambda c: emb)
            secs = time.perf_counter() - t
            out[tree] = (secs, _size(work / str(tree)), s)
            tab.add_row(
                "on" if tree else "off",
                str(s.total_documents),
                str(s.total_chunks),
                f"{secs:.1f}",
                f"{s.tree.get('seconds', 0):.2f}" if tree else "",
                f"{s.tree.get('sections', 0)} / {s.tree.get('documents', 0)}" if tree else "",
                f"{out[tree][1] / 1e6:.1f}",
            )
        (off_s, off_b, _), (on_s, on_b, s) = out[False], out[True]
        per_1000 = s.tree.get("seconds", 0) * 1000 / max(1, s.total_documents)
        tab.add_row(
            "added",
            "",
            "",
            f"{100 * (on_s - off_s) / off_s:+.1f}%",
            f"{per_1000:.1f} s / 1,000 docs",
            "",
            f"{100 * (on_b - off_b) / off_b:+.1f}%",
        )
        Console(width=160).print(tab)
        print("targets: tree build < 5 min per 1,000 documents, storage overhead < 50 %")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
