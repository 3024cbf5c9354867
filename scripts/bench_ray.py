"""``ragkit index --engine ray`` with 1 and 2 workers vs the local pipeline, side by side in one run, and a
paper estimate for a large corpus from the measured per-worker rate.

The corpus (default scifact-train's corpus.jsonl, which Ray takes in parts of records; ``--as-files``: one
text file per document instead) is indexed by fresh ``ragkit index`` processes (model load, Ray start-up and
commit included), one after the other in one run.

    python scripts/bench_ray.py [--corpus ../shared/data/scifact-train/corpus.jsonl] [--work DIR]
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
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent


def files_of(corpus: Path, folder: Path, docs: int | None) -> int:
    folder.mkdir(parents=True)
    n = 0
    with corpus.open() as fh:
        for line in fh:
            if docs is not None and n >= docs:
                break
            rec = json.loads(line)
            (folder / f"{rec['_id']}.txt").write_text(f"{rec.get('title', '')}\n\n{rec.get('text', '')}\n")
            n += 1
    return n


def run(folder: Path, index: Path, *extra: str) -> tuple[float, dict]:
    shutil.rmtree(index, ignore_errors=True)
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "ragkit", "index", str(folder), "--index", str(index), "--json", *extra],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    return time.perf_counter() - t, json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "data" / "scifact-train" / "corpus.jsonl")
    ap.add_argument("--docs", type=int)
    ap.add_argument("--work", type=Path)
    ap.add_argument("--as-files", action="store_true", help="index one text file per document")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="ragkit-ray-"))
    shutil.rmtree(work, ignore_errors=True)
    if args.as_files:
        n, source = files_of(args.corpus, work / "files", args.docs), work / "files"
    else:
        work.mkdir(parents=True)
        source = work / "corpus.jsonl"
        with args.corpus.open() as fh:
            lines = [line for k, line in enumerate(fh) if args.docs is None or k < args.docs]
        source.write_text("".join(lines))
        n = len(lines)
    rows = []
    for label, extra in (
        ("local pipeline", ()),
        ("Ray, 1 worker", ("--engine", "ray", "--ray-workers", "1")),
        ("Ray, 2 workers", ("--engine", "ray", "--ray-workers", "2")),
    ):
        secs, summary = run(source, work / "idx", *extra)
        rows.append((label, secs, summary))
    base = rows[0][1]
    what = "files" if args.as_files else "documents in one corpus.jsonl"
    table = Table(title=f"ragkit index of {n:,} {what} ({args.corpus.parent.name}), fresh builds, one run")
    for col in (
        "pipeline",
        "wall s",
        "vs local",
        "chunks",
        "chunks / s",
        "parse + embed s",
        "Ray start s",
        "driver: LanceDB s",
        "driver: DuckDB + commit s",
        "driver peak MiB",
    ):
        table.add_column(col, justify="left" if col == "pipeline" else "right")
    for label, secs, s in rows:
        stage = s["seconds"].get("ray_work") or s["seconds"].get("parse_chunk", 0) + s["seconds"].get("embed", 0)
        table.add_row(
            label,
            f"{secs:.1f}",
            f"{base / secs:.2f}×",
            f"{s['chunks']:,}",
            f"{s['chunks'] / secs:.1f}",
            f"{stage:.1f}",
            f"{s['seconds'].get('ray_start', 0):.1f}",
            f"{s['seconds'].get('write_lance', 0):.1f}",
            f"{s['seconds'].get('commit', 0):.1f}",
            f"{s.get('peak_rss_mb', 0):,.0f}",
        )
    Console().print(table)
    one = rows[1][2]
    per_worker = one["chunks"] / one["seconds"]["ray_work"]
    print(
        f"per-worker rate (Ray, 1 worker, one CPU, parse + chunk + embed + write the fragment): "
        f"{per_worker:.1f} chunks/s"
    )
    for nodes, cores in ((10, 16), (50, 32), (100, 64)):
        hours = 100e6 / (per_worker * nodes * cores) / 3600
        print(
            f"paper estimate, 100 M chunks on {nodes} nodes × {cores} cores: {hours:,.1f} h of workers "
            "(plus the driver: reading the files, the FTS index, the DuckDB run)"
        )


if __name__ == "__main__":
    main()
