"""lexical: BM25 over the LanceDB full-text index."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragkit.records import Hit

if TYPE_CHECKING:  # a strategy is called with a context; it needs none at import
    from ragkit.retrieve.context import SearchContext


def search(ctx: SearchContext) -> list[Hit]:
    hits = ctx.lexical(ctx.limit)
    for i, h in enumerate(hits, start=1):
        h.ranks, h.scores = {"lexical": i}, {"lexical": h.score}
    return hits
