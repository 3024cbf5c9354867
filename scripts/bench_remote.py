"""Index on object storage vs local disk, side by side in one run: moto's S3 server on loopback (so the ratio
shows what the object-store path itself costs, not a network).

Rows: a first ``ragkit index`` of the corpus, an incremental one (one file edited), a one-shot
``ragkit query --json`` (median of ``--cold-runs``), warm queries through one reader (p50 / p95 over
``--n`` questions, hybrid and auto), and the index's bytes.

    python scripts/bench_remote.py [--corpus ../shared/data/rust-book/src] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from tests.s3 import moto_s3  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = [
    "How do I read a file into a string?",
    "What is ownership?",
    "How do I handle errors with Result?",
    "What does the borrow checker check?",
    "How do I spawn a thread?",
    "What is a trait object?",
    "How are closures captured?",
    "What is the difference between Box and Rc?",
    "How do I write tests?",
    "What are lifetimes?",
]


def cli(*args: str) -> float:
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ragkit", *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    return time.perf_counter() - t


def warm(index: str, strategy: str, n: int) -> tuple[float, float]:
    from ragkit import api
    from ragkit.config import QueryConfig

    reader = api.open_index(index)
    api.query(reader, QUESTIONS[0], QueryConfig(strategy=strategy))  # loads
    times = []
    for i in range(n):
        t = time.perf_counter()
        api.query(reader, QUESTIONS[i % len(QUESTIONS)], QueryConfig(strategy=strategy))
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "data" / "rust-book" / "src")
    ap.add_argument("--work", type=Path)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--cold-runs", type=int, default=3)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="ragkit-remote-"))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    folder = work / "corpus"
    shutil.copytree(args.corpus, folder)
    edited = sorted(p for p in folder.rglob("*.md"))[len(QUESTIONS)]
    from ragkit.config import resolve_index_dir
    from ragkit.store.sizes import index_bytes

    with moto_s3(work / "moto.log", "bench", work / "cache"):
        warmup = work / "warmup"  # the encoder's one-time export into the fresh cache, before anything is timed
        warmup.mkdir()
        (warmup / "a.md").write_text("# A\n\nA short note.\n")
        cli("index", str(warmup), "--index", str(work / "warmup-index"))
        where = {"local disk": str(work / "local"), "S3 (moto, loopback)": "s3://bench/corpus"}
        rows: dict[str, dict[str, str]] = {name: {} for name in where}
        for name, index in where.items():
            rows[name]["first index s"] = f"{cli('index', str(folder), '--index', index):.1f}"
        with edited.open("a") as fh:
            fh.write("\n\nA paragraph added between two runs.\n")
        for name, index in where.items():
            rows[name]["incremental index s"] = f"{cli('index', str(folder), '--index', index):.2f}"
        for name, index in where.items():
            cold = sorted(cli("query", "--json", "--index", index, QUESTIONS[0]) for _ in range(args.cold_runs))
            rows[name]["one-shot query s"] = f"{cold[len(cold) // 2]:.2f}"
            for strategy in ("hybrid", "auto"):
                p50, p95 = warm(index, strategy, args.n)
                rows[name][f"warm {strategy} p50 / p95 ms"] = f"{p50:.1f} / {p95:.1f}"
            rows[name]["index bytes"] = f"{index_bytes(resolve_index_dir(index)) / 1e6:.1f} MB"
    table = Table(title=f"object storage vs local disk: {args.corpus} (one run, side by side)")
    table.add_column("")
    for name in where:
        table.add_column(name, justify="right")
    for key in rows["local disk"]:
        table.add_row(key, *(rows[name][key] for name in where))
    Console().print(table)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
