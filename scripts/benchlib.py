"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

from pathlib import Path


def corpus_source(corpus: Path, docs: int | None, work: Path) -> Path:
    """What to index: a folder as it is, or the first ``docs`` documents of a BEIR corpus.jsonl (a copy in
    ``work``; all of them when ``docs`` is None)."""
    if not corpus.is_file():
        return corpus
    src = work / "data" / "corpus.jsonl"
    src.parent.mkdir(parents=True, exist_ok=True)
    with corpus.open() as fh:
        src.write_text("".join(line for n, line in enumerate(fh) if docs is None or n < docs))
    return src
