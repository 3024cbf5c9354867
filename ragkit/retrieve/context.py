"""What a strategy gets: the index, the parsed query, the prefilter, the config."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from ragkit.config import QueryConfig
from ragkit.retrieve.filters import NO_MATCH
from ragkit.retrieve.query_syntax import ParsedQuery
from ragkit.store.reader import IndexReader
from ragkit.records import Hit


@dataclass
class SearchContext:
    reader: IndexReader
    query: ParsedQuery
    where: str | None
    limit: int  # chunk hits wanted from the strategy
    cfg: QueryConfig
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: dict = field(default_factory=dict)  # strategy remarks for the plan (seeds, fallback)
    context_items: list = field(default_factory=list)  # entities, relations, community reports

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            self.timings_ms[stage] = self.timings_ms.get(stage, 0.0) + (time.perf_counter() - t) * 1000

    def dense(self, limit: int) -> list[Hit]:
        if self.where == NO_MATCH:
            return []
        with self.timed("load_model"):
            embedder = self.reader.embedder  # loads once per process
        with self.timed("embed_query"):
            vec = embedder.encode_query(self.query.text)
        with self.timed("dense"):
            rows = self.reader.chunks.vector_search(vec, limit, self.where)
        return self.reader.to_hits(rows, "dense")

    def lexical(self, limit: int) -> list[Hit]:
        if self.where == NO_MATCH:
            return []
        with self.timed("lexical"):
            rows = self.reader.chunks.fts_search(self.query.text, limit, self.where)
        return self.reader.to_hits(rows, "lexical")
