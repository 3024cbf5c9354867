"""Peak memory (RSS) of indexing and of query processes (issue 16 budgets: indexing scifact-train ≤ 2 GB, a query
process ≤ 1 GB).

Rows: ``ragkit index`` of the corpus (a fresh ``--full`` build); a one-shot ``ragkit query --json`` per strategy;
one with ``--answer`` (the GGUF model loaded); and one long-lived process that asks ``--n`` questions of every
strategy through one reader (what ``ragkit serve`` or an interactive session holds after a while). Peaks from
``/usr/bin/time`` (the kernel's accounting, per child process).

    python scripts/bench_memory.py --corpus ../shared/data/scifact-train/corpus.jsonl --work /tmp/mem
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib import timed  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

STRATEGIES = ["naive", "lexical", "hybrid", "auto", "hippo", "local", "light", "global", "hierarchical"]
LONG_LIVED = """
import json, resource, sys
from ragkit import api
from ragkit.config import QueryConfig
reader = api.open_index(sys.argv[1])
queries = [json.loads(line)["text"] for line in open(sys.argv[2]) if line.strip()][: int(sys.argv[3])]
for strategy in sys.argv[4].split(","):
    for q in queries:
        api.query(reader, q, QueryConfig(k=10, strategy=strategy))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--queries", type=Path, help="queries.jsonl (default: beside the corpus)")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--n", type=int, default=100, help="questions per strategy in the long-lived process")
    ap.add_argument("--no-answer", action="store_true", help="skip the --answer row")
    args = ap.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    queries = args.queries or args.corpus.parent / "queries.jsonl"
    first = json.loads(next(line for line in queries.open() if line.strip()))["text"]
    idx = args.work / "idx"
    shutil.rmtree(idx, ignore_errors=True)
    args.work.mkdir(parents=True, exist_ok=True)
    exe = [sys.executable, "-m", "ragkit"]
    rows = [("ragkit index (fresh build)", *timed(exe + ["index", str(args.corpus), "--index", str(idx)], env))]
    for s in STRATEGIES:
        rows.append(
            (
                f"ragkit query --json --strategy {s}",
                *timed(exe + ["query", "--json", "--strategy", s, "--index", str(idx), first], env),
            )
        )
    if not args.no_answer:
        rows.append(
            (
                "ragkit query --answer --json (hybrid)",
                *timed(exe + ["query", "--answer", "--json", "--strategy", "hybrid", "--index", str(idx), first], env),
            )
        )
    rows.append(
        (
            f"one process, {args.n} questions × {len(STRATEGIES)} strategies",
            *timed([sys.executable, "-c", LONG_LIVED, str(idx), str(queries), str(args.n), ",".join(STRATEGIES)], env),
        )
    )
    table = Table(title=f"peak RSS: {args.corpus}")
    for col in ("process", "wall s", "peak RSS MiB"):
        table.add_column(col, justify="right" if col != "process" else "left")
    for name, wall, rss in rows:
        table.add_row(name, f"{wall:.2f}", f"{rss:,.0f}")
    Console().print(table)


if __name__ == "__main__":
    main()
