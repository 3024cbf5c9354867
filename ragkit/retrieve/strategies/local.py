"""local: GraphRAG-style local search around the query's entities.

Query entities are the names, acronyms, aliases and n-gram keys the entity
graph knows (weighted by specificity) plus the entities with the nearest
(derived) vectors; they are expanded ``max_hops`` relation hops. The
neighbourhood's entities (by relation strength to the seeds, with their
descriptions) and relations (with their connecting sentences) become context
items, and chunks are ranked by how much of the weighted neighbourhood they
mention, fused with the dense and BM25 rankings (the graph list weighted like
hippo's PPR list) — ranked as the seed describes: entities, then relations,
then chunks. No query entity → hybrid.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from typing import TYPE_CHECKING

from ragkit.records import Hit
from ragkit.retrieve.strategies import hybrid
from ragkit.retrieve.strategy_settings import LocalSettings as Settings

if TYPE_CHECKING:  # a strategy is called with a context; it needs none at import
    from ragkit.retrieve.context import SearchContext

MAX_ENTITIES = 10
MAX_RELATIONS = 10


def search(ctx: SearchContext) -> list[Hit]:
    s = ctx.cfg.of(Settings)
    graph = ctx.reader.entity_graph
    seeds = ctx.entity_seeds(vector_seeds=s.vector_seeds) if not ctx.never else {}
    if not seeds:
        ctx.notes["fallback"] = "no query entity in the graph: hybrid"
        return hybrid.search(ctx)
    with ctx.timed("neighbourhood"):
        entities, relations = graph.neighbourhood(seeds, hops=s.max_hops)
        chunk_score: dict[str, float] = defaultdict(float)
        for key, weight in entities.items():
            for cid in graph.chunks_of(key):
                chunk_score[cid] += weight
    # only the best few are shown (a two-hop neighbourhood of a common entity holds thousands)
    ranked_entities = heapq.nsmallest(MAX_ENTITIES * 3, entities.items(), key=lambda kv: (-kv[1], kv[0]))
    ranked_relations = heapq.nsmallest(MAX_RELATIONS * 3, relations, key=lambda r: (-r[2], r[0], r[1]))
    with ctx.timed("context"):
        rows = ctx.reader.knowledge_rows()
        entity_rows = rows.entity_rows([k for k, _ in ranked_entities])
        relation_rows = rows.relation_rows([(a, b) for a, b, _ in ranked_relations])
    shown = {}
    for row in entity_rows:  # one visible row per entity (its collection's description)
        if row["key"] not in shown and ctx.visible(row["collection"], row["source_documents"]):
            shown[row["key"]] = row
    ctx.context_items.extend([ctx.entity_item(shown[k], w) for k, w in ranked_entities if k in shown][:MAX_ENTITIES])
    by_pair = {}
    for row in relation_rows:
        if (row["a"], row["b"]) not in by_pair and ctx.visible(row["collection"], [row["source_document"]]):
            by_pair[(row["a"], row["b"])] = row
    ctx.context_items.extend(
        [ctx.relation_item(by_pair[(a, b)], w) for a, b, w in ranked_relations if (a, b) in by_pair][:MAX_RELATIONS]
    )
    fetch = ctx.limit * ctx.cfg.overfetch
    ranked = heapq.nsmallest(fetch, chunk_score.items(), key=lambda kv: (-kv[1], kv[0]))
    return ctx.fuse_with_text("local", ctx.hits_for(ranked), fetch, s.graph_weight)
