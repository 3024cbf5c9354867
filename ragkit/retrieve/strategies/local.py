"""local: GraphRAG-style local search around the query's entities.

Query entities (names, acronyms and n-gram keys the entity graph knows,
weighted by specificity) are expanded ``max_hops`` relation hops; the
neighbourhood's entities (by relation strength to the seeds) and relations
(with their connecting sentences) become context items, and chunks are ranked
by how much of the weighted neighbourhood they mention, fused with the dense
and BM25 rankings (the graph list weighted like hippo's PPR list). Ranked as the seed describes: entities, then relations, then chunks.
No query entity → hybrid.
"""

from collections import defaultdict

from ragkit.records import Hit
from ragkit.retrieve.context import SearchContext
from ragkit.retrieve.filters import NO_MATCH
from ragkit.retrieve.strategies import hybrid

MAX_ENTITIES = 10
MAX_RELATIONS = 10


def search(ctx: SearchContext) -> list[Hit]:
    graph = ctx.reader.entity_graph
    seeds = ctx.entity_seeds()
    if not seeds or ctx.where == NO_MATCH:
        ctx.notes["fallback"] = "no query entity in the graph: hybrid"
        return hybrid.search(ctx)
    with ctx.timed("neighbourhood"):
        entities, relations = graph.neighbourhood(seeds, hops=ctx.cfg.max_hops)
        chunk_score: dict[str, float] = defaultdict(float)
        for key, weight in entities.items():
            for cid in graph.chunks_of(key):
                chunk_score[cid] += weight
    top_entities = sorted(entities.items(), key=lambda kv: -kv[1])[:MAX_ENTITIES]
    top_relations = sorted(relations, key=lambda r: -r[2])[:MAX_RELATIONS]
    with ctx.reader.duck() as store:
        desc = store.relation_descriptions([(a, b) for a, b, _ in top_relations])
    ctx.context_items.extend({"type": "entity", "entity": k, "score": round(w, 4)} for k, w in top_entities)
    ctx.context_items.extend({"type": "relation", "source": a, "target": b, "weight": round(w, 4),
                              "description": desc.get((a, b), "")} for a, b, w in top_relations)
    fetch = ctx.limit * ctx.cfg.overfetch
    ranked = sorted(chunk_score.items(), key=lambda kv: -kv[1])[:fetch]
    # the graph list gets the same share as hippo's PPR list
    return ctx.fuse_with_text("local", ctx.hits_for(ranked), fetch, ctx.cfg.ppr_weight)
