#!/usr/bin/env python
"""Index time with rule-based entity extraction vs. without, side by side in one run.

    python scripts/bench_extract.py ../shared/data/hotpotqa-100/corpus.jsonl [--docs N]

Indexes the same BEIR corpus (first N documents) twice with one loaded model,
``extract = "none"`` and ``extract = "rules"``, and prints both times, the
added share, and the entity / relation / mention counts.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--docs", type=int, default=None)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ragkit-extract-"))
    try:
        src = corpus_source(args.corpus, args.docs, work)
        cfg = IndexConfig()
        cfg = replace(cfg, embed_model=model_for_paths([src], cfg))  # the model the index run would choose
        emb = load_embedder(cfg.embed_model, cfg.embed_batch_size, cfg.encoder)
        emb.encode(["warm up"] * 8)
        tab = Table(title=f"{args.corpus.parent.name}: indexing with and without entity extraction")
        for col in ("extract", "seconds", "entities", "relations", "communities", "mentions", "stages"):
            tab.add_column(col, justify="right" if col != "stages" else "left")
        times = {}
        for mode in ("none", "rules"):
            t = time.perf_counter()
            s = api.index([src], work / mode, replace(cfg, extract=mode), embedder_factory=lambda c: emb)
            times[mode] = time.perf_counter() - t
            with api.open_index(work / mode, embedder=emb).duck() as store:
                n = store.rows(
                    "SELECT (SELECT count(*) FROM entities) AS e, (SELECT count(*) FROM relations) AS r, "
                    "(SELECT count(*) FROM mentions) AS m, (SELECT string_agg(n || ' L' || level, ' + ') "
                    "FROM (SELECT level, count(*) AS n FROM communities GROUP BY level ORDER BY level)) AS c"
                )[0]
            tab.add_row(
                mode,
                f"{times[mode]:.1f}",
                str(n["e"]),
                str(n["r"]),
                n["c"] or "0",
                str(n["m"]),
                ", ".join(f"{k} {v:.1f}s" for k, v in s.seconds.items() if k != "total"),
            )
        tab.add_row(
            "added",
            f"+{100 * (times['rules'] - times['none']) / times['none']:.1f}%",
            "",
            "",
            "",
            "",
            "target < 50% (extraction, entity graph, communities)",
        )
        Console(width=160).print(tab)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
