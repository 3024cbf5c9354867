#!/usr/bin/env python
"""The not-prose checks (``ragkit.text.word_share`` < ``PROSE_MIN``, ``repetition`` > ``REPEAT_MAX``): false
positives on every shared data set, and what they say of generated noise.

    python scripts/bench_prose.py [--data ../shared/data]

Every document of every data set (Markdown/HTML/text files parsed as the indexer parses them; each record of a
BEIR corpus.jsonl) is scored; a real document below ``PROSE_MIN`` would be skipped at index time (the target is
none). Then base64, a hex dump, minified JavaScript and random bytes decoded as Windows-1252.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit.ingest.discover import decode  # noqa: E402
from ragkit.ingest.parse import parser_for  # noqa: E402
from ragkit.records import Block  # noqa: E402
from ragkit.text import PROSE_MIN, REPEAT_MAX, repetition, word_share  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def documents(data: Path):
    """(data set, document, text as indexed) for every document under ``data``."""
    for f in sorted(data.rglob("*")):
        if not f.is_file():
            continue
        name = f.relative_to(data).parts[0]
        if f.name == "corpus.jsonl":
            for line in f.open():
                obj = json.loads(line)
                yield name, obj["_id"], f"{obj.get('title', '')}\n{obj.get('text', '')}"
        elif f.suffix in (".md", ".markdown", ".txt", ".rst", ".html", ".htm"):
            raw = parser_for(f.name)(decode(f.read_bytes()))
            yield name, str(f.relative_to(data)), "\n".join(i.text for i in raw.items if isinstance(i, Block))


def noise() -> dict[str, str]:
    rng = random.Random(1)
    return {
        "base64 (300 KB)": base64.b64encode(rng.randbytes(225_000)).decode(),
        "hex dump": "\n".join(" ".join(f"{rng.randrange(256):02x}" for _ in range(16)) for _ in range(4000)),
        "minified JavaScript": "var a=function(b){return b*2},c=[1,2,3].map(a);" * 2000,
        "random bytes as Windows-1252": rng.randbytes(60_000).decode("cp1252", errors="replace"),
        "one word repeated (1 MB line)": "word " * 200_000,
        "one sentence repeated": "Large text file. " * 80_000,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = ap.parse_args()
    by_set: dict[str, list[tuple[float, float, str]]] = {}
    for name, doc, text in documents(args.data):
        by_set.setdefault(name, []).append((word_share(text), repetition(text), doc))
    tab = Table(
        title=f"word share of every document (not prose below {PROSE_MIN}) and compression of its start "
        f"(repeats itself above {REPEAT_MAX:g}×)"
    )
    for col in (
        "data set",
        "documents",
        "lowest word share",
        "1st percentile",
        "median",
        "highest compression",
        "would be skipped",
    ):
        tab.add_column(col, justify="left" if col == "data set" else "right")
    for name, scores in sorted(by_set.items()):
        scores.sort()
        values = [s for s, _, _ in scores]
        worst = max(scores, key=lambda x: x[1])
        tab.add_row(
            name,
            f"{len(values):,}",
            f"{values[0]:.3f} ({scores[0][2]})",
            f"{values[len(values) // 100]:.3f}",
            f"{statistics.median(values):.3f}",
            f"{worst[1]:.1f}× ({worst[2]})",
            str(sum(1 for v, r, _ in scores if v < PROSE_MIN or r > REPEAT_MAX)),
        )
    for label, text in noise().items():
        share, ratio = word_share(text), repetition(text)
        tab.add_row(
            label,
            "1",
            f"{share:.3f}",
            "",
            "",
            f"{ratio:.1f}×",
            "skipped" if share < PROSE_MIN or ratio > REPEAT_MAX else "INDEXED",
        )
    Console(width=160).print(tab)


if __name__ == "__main__":
    main()
