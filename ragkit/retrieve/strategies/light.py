"""light: LightRAG-style dual-level search over entity and relation vectors.

Low level: the entities most similar to the query (the mean of the chunks
that mention it); high level: the relations most similar to it (their two
entities and connecting sentence's chunk). The vectors are derived from the
chunk vectors when first needed (ragkit/store/knowledge/vectors.py). Each side ranks the chunks its
items come from (a chunk scores the similarity of every item it holds); the
two chunk rankings are fused with ``entity_weight`` for the entity side, then
with the dense and BM25 rankings like hippo's PPR list. The best entities and
relations become context items. No entity or relation in scope → hybrid.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from ragkit.records import Hit
from ragkit.retrieve.fusion import weighted_rrf
from ragkit.retrieve.strategies import hybrid
from ragkit.retrieve.strategy_settings import LightSettings as Settings

if TYPE_CHECKING:  # a strategy is called with a context; it needs none at import
    from ragkit.retrieve.context import SearchContext

LIGHT_ENTITIES = 20
LIGHT_RELATIONS = 20
CONTEXT_ITEMS = 10


def _chunk_ranking(items: list[dict]) -> list[tuple[str, float]]:
    score: dict[str, float] = defaultdict(float)
    for it in items:
        for cid in it["chunk_ids"]:
            score[cid] += it["similarity"]
    return sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))


def search(ctx: SearchContext) -> list[Hit]:
    if ctx.never:
        return []
    entities = ctx.knowledge_search("entities", LIGHT_ENTITIES)
    relations = ctx.knowledge_search("relations", LIGHT_RELATIONS)
    if not entities and not relations:
        ctx.notes["fallback"] = "no entity or relation in scope: hybrid"
        return hybrid.search(ctx)
    fetch = ctx.limit * ctx.cfg.overfetch
    s = ctx.cfg.of(Settings)
    w = s.entity_weight
    with ctx.timed("expand"):
        low = ctx.hits_for(_chunk_ranking(entities)[:fetch])
        high = ctx.hits_for(_chunk_ranking(relations)[:fetch])
        graph = weighted_rrf(
            {"entities": low, "relations": high}, {"entities": w, "relations": 1 - w}, k=ctx.cfg.rrf_k
        )[:fetch]
    ctx.notes["entities"] = [e["key"] for e in entities[:CONTEXT_ITEMS]]
    ctx.context_items.extend(ctx.entity_item(e, e["similarity"]) for e in entities[:CONTEXT_ITEMS])
    ctx.context_items.extend(ctx.relation_item(r, r["similarity"]) for r in relations[:CONTEXT_ITEMS])
    return ctx.fuse_with_text("light", graph, fetch, s.graph_weight)
