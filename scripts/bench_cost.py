#!/usr/bin/env python
"""What an index costs: folder size against the source, index time against the encoder, peak memory, growth.

    python scripts/bench_cost.py [--sets rust-book,german-laws,hotpotqa,scifact] [--growth 1,2,4]
                                 [--work DIR] [--raw-encoder]

Each corpus is indexed from scratch with the default settings and the bundled model its language gets, in
its own process (its peak RSS is that process's). Printed as one table:

- source: bytes of the files indexed; index: bytes of the index folder; ratio (budget ≤ 10×);
- run: the indexing run's seconds without the model load; encoder: the seconds its embed stage spent
  encoding the chunks (with ``--raw-encoder`` also the bare encoder of the run (int8 ONNX by default) on the same chunk
  texts, afterwards in the same process); run / encoder (budget ≤ 1.3×);
- peak RSS of the process; bytes per component (``ragkit stats``) under the table.

``--growth 1,2,4`` indexes the German laws 1×, 2× and 4× (copies under other names) and prints bytes and
seconds per source MB, which must stay flat (within 20 %). Each copy after the first ends every paragraph
with its edition ("(Fassung 2)"), so no chunk repeats another's text: identical strings cost next to nothing
in LanceDB's and DuckDB's dictionary encodings (the ×4 text column came out smaller than the ×1 one), which
a corpus of distinct documents never gets. ``--identical-copies`` measures the plain copies.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ragkit.store.sizes import folder_bytes  # noqa: E402

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
SETS = {
    "rust-book": SHARED / "rust-book" / "src",
    "german-laws": SHARED / "german-laws" / "laws",
    "hotpotqa": SHARED / "hotpotqa-100" / "corpus.jsonl",
    "scifact": SHARED / "scifact-train" / "corpus.jsonl",
}
MB = 1024 * 1024


def child(src: Path, idx: Path, raw: bool) -> None:
    """Index ``src`` into ``idx`` and print the figures as JSON (runs in its own process)."""
    from ragkit import api
    from ragkit.config import IndexConfig
    from ragkit.embed import load_embedder
    from ragkit.ingest.source import model_for_paths

    cfg = IndexConfig()
    cfg = replace(cfg, embed_model=model_for_paths([src], cfg))  # the model the index run would choose
    t = time.perf_counter()
    emb = load_embedder(cfg.embed_model, cfg.embed_batch_size, cfg.encoder)
    emb.encode(["warm up the model"] * 8)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    summary = api.index([src], idx, cfg, embedder_factory=lambda c: emb)
    run_s = time.perf_counter() - t
    out = {
        "run_s": run_s,
        "load_s": load_s,
        "stages": summary.seconds,
        "chunks": summary.total_chunks,
        "documents": summary.total_documents,
        "knowledge": summary.knowledge,
    }
    if raw:
        reader = api.open_index(idx, embedder=emb)
        with reader.duck() as store:
            texts = [
                f"{h}\n{x}" if h else x
                for h, x in store.con.execute(
                    "SELECT header, text FROM chunks ORDER BY document_id, chunk_index"
                ).fetchall()
            ]
        t = time.perf_counter()
        emb.encode(texts)  # the bare encoder the run used (int8 ONNX by default), same chunk texts
        out["raw_encoder_s"] = time.perf_counter() - t
    reader = api.open_index(idx, embedder=emb)
    out["stats"] = api.stats(reader)
    print("RESULT " + json.dumps(out, default=str))


def run_child(src: Path, idx: Path, raw: bool) -> dict:
    """One child process; its peak RSS from the kernel's accounting."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", str(src), str(idx)] + (["--raw-encoder"] if raw else []),
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        sys.exit(f"indexing {src} failed:\n{out[-2000:]}")
    line = next(ln for ln in out.splitlines() if ln.startswith("RESULT "))
    res = json.loads(line[len("RESULT ") :])
    res["peak_rss_mb"] = usage.ru_maxrss / 1024
    res["source_bytes"] = folder_bytes(src)
    res["index_bytes"] = folder_bytes(idx)
    return res


def laws_copies(n: int, work: Path, identical: bool = False) -> Path:
    """The German laws ``n`` times, each copy under another folder name; unless ``identical``, copy ``i`` > 0
    ends every paragraph of the body with "(Fassung i+1)"."""
    root = work / f"laws-x{n}{'-identical' if identical else ''}"
    if root.exists():
        return root
    for i in range(n):
        shutil.copytree(SETS["german-laws"], root / f"copy{i}")
        if i and not identical:
            for path in (root / f"copy{i}").rglob("*.md"):
                path.write_text(edition(path.read_text(), i + 1))
    return root


def edition(markdown: str, number: int) -> str:
    """``markdown`` with " (Fassung N)" at the end of each paragraph that is not a heading (front matter kept)."""
    head, body = "", markdown
    if markdown.startswith("---\n"):
        end = markdown.index("\n---\n", 4) + 5
        head, body = markdown[:end], markdown[end:]
    blocks = body.split("\n\n")
    marked = [
        b.rstrip("\n") + f" (Fassung {number})" + b[len(b.rstrip("\n")) :]
        if b.strip() and not b.lstrip().startswith("#")
        else b
        for b in blocks
    ]
    return head + "\n\n".join(marked)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default="rust-book,german-laws,hotpotqa,scifact")
    ap.add_argument("--growth", default="", help="e.g. 1,2,4: the German laws that many times")
    ap.add_argument("--work", type=Path)
    ap.add_argument("--raw-encoder", action="store_true", help="also time the bare encoder on the same chunks")
    ap.add_argument("--identical-copies", action="store_true", help="--growth with plain copies of the laws")
    ap.add_argument("--child", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(*args.child, args.raw_encoder)

    from rich.console import Console
    from rich.table import Table

    work = args.work or Path(tempfile.mkdtemp(prefix="ragkit-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    runs: list[tuple[str, dict]] = []
    for name in [s for s in args.sets.split(",") if s]:
        shutil.rmtree(work / name, ignore_errors=True)
        runs.append((name, run_child(SETS[name], work / name, args.raw_encoder)))
    for n in [int(x) for x in args.growth.split(",") if x]:
        shutil.rmtree(work / f"growth-x{n}", ignore_errors=True)
        runs.append(
            (
                f"german-laws ×{n}",
                run_child(laws_copies(n, work, args.identical_copies), work / f"growth-x{n}", args.raw_encoder),
            )
        )

    tab = Table(title=f"index cost (indexes in {work})")
    for col in (
        "corpus",
        "chunks",
        "source MB",
        "index MB",
        "index / source",
        "run s",
        "encoder s",
        "run / encoder",
        "raw encoder s",
        "peak RSS MB",
        "MB per source MB",
        "s per source MB",
    ):
        tab.add_column(col, justify="left" if col == "corpus" else "right")
    for name, r in runs:
        src_mb = r["source_bytes"] / MB
        enc = r["stages"].get("embed", 0.0)
        run_s = r["run_s"] - r["stages"].get("load_model", 0.0)
        tab.add_row(
            name,
            f"{r['chunks']:,}",
            f"{src_mb:.2f}",
            f"{r['index_bytes'] / MB:.1f}",
            f"{r['index_bytes'] / r['source_bytes']:.1f}×",
            f"{run_s:.1f}",
            f"{enc:.1f}",
            f"{run_s / enc:.2f}×" if enc else "-",
            f"{r['raw_encoder_s']:.1f}" if "raw_encoder_s" in r else "-",
            f"{r['peak_rss_mb']:.0f}",
            f"{r['index_bytes'] / MB / src_mb:.1f}",
            f"{run_s / src_mb:.1f}",
        )
    console = Console(width=200)
    console.print(tab)
    for name, r in runs:
        stages = ", ".join(f"{k} {v:.1f}" for k, v in r["stages"].items())
        console.print(f"[dim]{name}: stages (s) {stages}; knowledge {r['knowledge']}[/]")
        parts = r["stats"].get("bytes")
        if parts:
            console.print(f"[dim]{name}: bytes " + ", ".join(f"{k} {v / MB:.2f} MB" for k, v in parts.items()) + "[/]")


if __name__ == "__main__":
    main()
