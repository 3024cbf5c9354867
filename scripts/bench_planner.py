#!/usr/bin/env python
"""Rule-based planner latency: p50/p95 of plan_query (+ routing) over dataset queries.

python scripts/bench_planner.py ../shared/data/scifact-train/queries.jsonl ../shared/data/hotpotqa-100/queries.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit.evaluate import percentile  # noqa: E402
from ragkit.retrieve.planner import plan_query  # noqa: E402
from ragkit.retrieve.router import route  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("queries", nargs="+", type=Path)
    args = ap.parse_args()
    tab = Table(title="rule-based planner + router latency (target p50 < 5 ms)")
    for col in ("queries", "n", "p50 ms", "p95 ms", "routed"):
        tab.add_column(col, justify="left" if col in ("queries", "routed") else "right")
    doc_types = {"policy", "contract", "law", "technical", "paper", "notes", "unknown"}
    plan_query("warm up", doc_types)
    for path in args.queries:
        texts = [json.loads(line)["text"] for line in path.open() if line.strip()]
        lat, routed = [], {}
        for q in texts:
            t = time.perf_counter()
            try:
                plan = plan_query(q, doc_types)
            except Exception:  # noqa: BLE001 — a query the planner rejects still counts its time
                lat.append((time.perf_counter() - t) * 1000)
                continue
            r = route(plan, [], True, True)
            lat.append((time.perf_counter() - t) * 1000)
            routed[r.strategy] = routed.get(r.strategy, 0) + 1
        tab.add_row(
            path.parent.name,
            str(len(texts)),
            f"{percentile(lat, 0.5):.3f}",
            f"{percentile(lat, 0.95):.3f}",
            ", ".join(f"{k} {v}" for k, v in sorted(routed.items())),
        )
    Console(width=120).print(tab)


if __name__ == "__main__":
    main()
