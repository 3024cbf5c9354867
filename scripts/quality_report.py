#!/usr/bin/env python
"""Measure what the quality gate checks and print it beside the recorded floors (tests/data/quality_floors.toml).

    python scripts/quality_report.py [--work DIR] [--set hotpotqa,legal,router]

Indexes ../shared/data/hotpotqa-100 and the shared German laws with the default settings and the real bundled
model (into DIR, default a temporary folder; an existing index there is updated incrementally), runs every
recorded hotpotqa strategy on all 100 questions, the legal reference queries, the German questions and the
router's labelled set.
Use it to raise a floor after an improvement (copy the measured figure into the floors file and name it in
the change's note), or to see by how much a change missed one.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402
from tests import quality  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, help="folder for the indexes (default: a temporary folder)")
    ap.add_argument("--set", default="hotpotqa,legal,german,router", help="which measurements (comma-separated)")
    args = ap.parse_args()
    wanted = set(args.set.split(","))
    work = args.work or Path(tempfile.mkdtemp(prefix="ragkit-quality-"))
    fl = quality.floors()
    checks: list[quality.Check] = []
    seconds: dict[str, float] = {}
    if "hotpotqa" in wanted:
        t = time.perf_counter()
        hp = fl["hotpotqa"]
        results = quality.hotpotqa_eval(work / "hotpotqa", hp["k"], list(hp["recorded"]))
        checks += quality.hotpotqa_checks(results, hp["recorded"], fl["tolerance"])
        seconds["hotpotqa (index + eval)"] = time.perf_counter() - t
    if "legal" in wanted:
        t = time.perf_counter()
        api.index([quality.GERMAN_LAWS], work / "laws")
        queries = quality.legal_queries()
        misses = quality.legal_misses(api.open_index(work / "laws"), queries)
        checks.append(
            quality.Check("legal references, top-1 hits", len(queries) - len(misses), fl["legal"]["top1_hits"], 0)
        )
        for q, got in misses:
            print(f"legal miss: {q!r} → {got}")
        seconds["german laws (index + queries)"] = time.perf_counter() - t
    if "german" in wanted:
        t = time.perf_counter()
        api.index([quality.GERMAN_LAWS], work / "laws")
        reader = api.open_index(work / "laws")
        for label, key in (("", ""), (" held out", "held_out_")):
            hits = quality.german_hits(reader, quality.german_questions(held_out=bool(key)))
            checks += [
                quality.Check(f"German questions{label} {m}", v, fl["german"][key + m], fl["tolerance"])
                for m, v in hits.items()
            ]
        seconds["german questions"] = time.perf_counter() - t
    if "router" in wanted:
        checks += quality.router_checks(fl["router"])
    tab = Table(title=f"quality gate figures (indexes in {work})")
    for col in ("figure", "measured", "recorded", "floor", ""):
        tab.add_column(col, justify="left" if col == "figure" else "right")
    for c in checks:
        tab.add_row(c.name, f"{c.got:.4f}", f"{c.recorded:.4f}", f"{c.floor:.4f}", "ok" if c.ok else "BELOW")
    console = Console(width=120)
    console.print(tab)
    for what, s in seconds.items():
        console.print(f"{what}: {s:.1f} s")


if __name__ == "__main__":
    main()
