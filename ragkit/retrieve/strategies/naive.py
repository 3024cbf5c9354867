"""naive: dense top-k over chunk vectors."""

from ragkit.records import Hit
from ragkit.retrieve.context import SearchContext


def search(ctx: SearchContext) -> list[Hit]:
    hits = ctx.dense(ctx.limit)
    for i, h in enumerate(hits, start=1):
        h.ranks, h.scores = {"dense": i}, {"dense": h.score}
    return hits
