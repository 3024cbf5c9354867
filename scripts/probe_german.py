#!/usr/bin/env python
"""Dense-side ideas for the German questions, measured on an index's own vectors without changing ragkit.

    python scripts/probe_german.py --index <index of ../shared/data/german-laws/laws> [--reembed]

The index is one built with the default settings (multilingual-e5-small). Each labelled question
(tests/data/german_questions.jsonl, tuned on, and german_questions_heldout.jsonl) is embedded with the index's
model; a chunk scores its cosine to the question (plus the variant's term), a section its best chunk, and a row
gives top-1 / top-3 (the labelled section first / among the first three) on both sets. Variants:

- heading vector: the chunk's heading path embedded alone as a passage, added with a weight;
- law score: the mean of the law's three best chunk scores, added with a weight (document-level aggregation);
- dense PRF: the question vector moved towards the mean of its three nearest chunks (weight), then re-scored;
- ``--reembed``: the chunk texts embedded again without their heading path, and with only the law and section
  titles as heading (about two minutes on the laws).

Dense only: no BM25, reranking or links, so the baseline row is below ``ragkit query``'s figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit import api  # noqa: E402

SETS = {"tuned": "german_questions.jsonl", "held out": "german_questions_heldout.jsonl"}


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


class Probe:
    def __init__(self, index: Path):
        import lance

        self.reader = api.open_index(index)
        rows = (
            lance.dataset(str(index / "lance" / "chunks.lance"))
            .to_table(columns=["header", "content", "path", "vector"])
            .to_pylist()
        )
        self.header = [r["header"] or "" for r in rows]
        self.content = [r["content"] for r in rows]
        self.vectors = unit(np.array([r["vector"] for r in rows], dtype=np.float32))
        laws = [Path(r["path"]).parent.name for r in rows]
        keys = [f"{law}|{h.split(' > ')[-1]}" for law, h in zip(laws, self.header)]
        self.keys, self.section_of = np.unique(keys, return_inverse=True)
        self.laws, self.law_of = np.unique(laws, return_inverse=True)
        headings = sorted(set(self.header))
        position = {h: i for i, h in enumerate(headings)}
        self.heading_of = np.array([position[h] for h in self.header])
        self.heading_vectors = unit(np.asarray(self.reader.embedder.encode(headings), dtype=np.float32))
        self.questions = {
            name: [json.loads(line) for line in (REPO / "tests" / "data" / f).read_text().splitlines() if line.strip()]
            for name, f in SETS.items()
        }
        self.query_vectors = {
            name: unit(np.asarray(self.reader.embedder.encode_queries([q["query"] for q in qs]), dtype=np.float32))
            for name, qs in self.questions.items()
        }

    def score(
        self, name: str, vectors: np.ndarray, heading: float = 0.0, law: float = 0.0, prf: float = 0.0
    ) -> tuple[int, int]:
        q = self.query_vectors[name]
        scores = q @ vectors.T
        if prf:
            nearest = np.argsort(-scores, axis=1)[:, :3]
            q = unit(q + prf * vectors[nearest].mean(axis=1))
            scores = q @ vectors.T
        if heading:
            scores = scores + heading * (q @ self.heading_vectors.T)[:, self.heading_of]
        if law:
            best3 = np.stack(
                [np.sort(scores[:, self.law_of == j], axis=1)[:, -3:].mean(axis=1) for j in range(len(self.laws))],
                axis=1,
            )
            scores = scores + law * best3[:, self.law_of]
        sections = np.full((len(q), len(self.keys)), -np.inf)
        for c, s in enumerate(self.section_of):
            sections[:, s] = np.maximum(sections[:, s], scores[:, c])
        order = np.argsort(-sections, axis=1)
        top1 = top3 = 0
        for i, question in enumerate(self.questions[name]):
            expected = question["section"] if isinstance(question["section"], list) else [question["section"]]
            wanted = {f"{question['law']}|{e}" for e in expected}
            ranks = [r for r, s in enumerate(order[i, :3]) if self.keys[s] in wanted]
            top1 += bool(ranks and ranks[0] == 0)
            top3 += bool(ranks)
        return top1, top3

    def reembedded(self, short: bool) -> np.ndarray:
        texts = []
        for header, content in zip(self.header, self.content):
            body = content[len(header) + 1 :] if header and content.startswith(header + "\n") else content
            parts = header.split(" > ")
            texts.append(f"{parts[0]} > {parts[-1]}\n{body}" if short and len(parts) > 1 else body)
        return unit(np.asarray(self.reader.embedder.encode(texts), dtype=np.float32))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True, type=Path)
    ap.add_argument("--reembed", action="store_true", help="also embed the chunk texts with other headings")
    args = ap.parse_args()
    probe = Probe(args.index)
    sizes = {name: len(qs) for name, qs in probe.questions.items()}
    tab = Table(title=f"dense only, section = best chunk, top-1 / top-3 ({args.index})")
    for col in ("variant", *(f"{name} ({n})" for name, n in sizes.items())):
        tab.add_column(col, justify="left" if col == "variant" else "right")
    rows = [("baseline (the index's vectors)", probe.vectors, {})]
    rows += [(f"heading vector × {w}", probe.vectors, {"heading": w}) for w in (0.3, 0.5, 1.0)]
    rows += [(f"law score × {w}", probe.vectors, {"law": w}) for w in (0.3, 0.5, 1.0)]
    rows += [(f"dense PRF {w}", probe.vectors, {"prf": w}) for w in (0.3, 0.5, 1.0)]
    if args.reembed:
        rows += [
            ("chunks embedded without heading path", probe.reembedded(short=False), {}),
            ("chunks embedded with law > section title only", probe.reembedded(short=True), {}),
        ]
    for label, vectors, kw in rows:
        tab.add_row(label, *(" / ".join(map(str, probe.score(name, vectors, **kw))) for name in sizes))
    Console().print(tab)


if __name__ == "__main__":
    main()
