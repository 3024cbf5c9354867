"""lexical: BM25 over the LanceDB full-text index."""

from ragkit.records import Hit
from ragkit.retrieve.context import SearchContext


def search(ctx: SearchContext) -> list[Hit]:
    hits = ctx.lexical(ctx.limit)
    for i, h in enumerate(hits, start=1):
        h.ranks, h.scores = {"lexical": i}, {"lexical": h.score}
    return hits
