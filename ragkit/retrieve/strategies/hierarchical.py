"""hierarchical: RAPTOR-lite search over the summary tree (seed 004).

The tree (ragkit/extract/summaries.py) has section nodes (level 1) and
document nodes (level 2) above the chunks, each with a summary and a
centroid vector (the mean of its chunks' vectors, derived when first needed:
ragkit/store/knowledge/vectors.py).

- ``collapsed`` mode (default): nodes of every level and chunks in one cosine
  ranking (RAPTOR's collapsed tree, the better mode in the RAPTOR paper and
  on our summary questions over the Rust book, scripts/README.md); a node stands for its
  best children at its own score.
- ``tree`` mode: the ``nodes`` nodes of each level most similar
  to the query are expanded to their ``children`` chunks most similar to
  the query, at the node's similarity × ``discount`` (the indirection
  discount of seed 004); direct chunk matches (dense) join at their own
  similarity; a chunk reached twice keeps its best score.

Either ranking is fused with BM25 by weighted RRF (alpha; hybrid's default is now the convex fusion, not yet
measured here, so hierarchical keeps RRF). The
best nodes' summaries become context items. No node in scope (a corpus of
one-chunk documents has no tree) → hybrid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragkit.records import Hit
from ragkit.retrieve.fusion import weighted_rrf
from ragkit.retrieve.strategies import hybrid
from ragkit.retrieve.strategy_settings import HierarchicalSettings as Settings

if TYPE_CHECKING:  # a strategy is called with a context; it needs none at import
    import numpy as np

    from ragkit.retrieve.context import SearchContext

CONTEXT_NODES = 3


def search(ctx: SearchContext) -> list[Hit]:
    cfg, s = ctx.cfg, ctx.cfg.of(Settings)
    nodes = _nodes(ctx) if not ctx.never else []
    if not nodes:
        ctx.notes["fallback"] = "no summary-tree node in scope: hybrid"
        return hybrid.search(ctx)
    if s.mode == "tree":
        chosen = [n for level in (1, 2) for n in [x for x in nodes if x["level"] == level][: s.nodes]]
        discount = s.discount
    else:
        chosen, discount = nodes[: 2 * s.nodes], 1.0
    fetch = ctx.limit * ctx.cfg.overfetch
    dense = ctx.dense(fetch)
    with ctx.timed("tree"):
        ranked = expand(ctx, chosen, discount, {h.chunk_id: h for h in dense})
    ctx.context_items.extend(_item(n) for n in sorted(chosen, key=lambda n: -n["similarity"])[:CONTEXT_NODES])
    ctx.notes["tree_nodes"] = [n["id"] for n in chosen]
    lexical = ctx.lexical(fetch)
    with ctx.timed("fusion"):
        fused = weighted_rrf(
            {"tree": ranked, "lexical": lexical}, {"tree": cfg.alpha, "lexical": 1.0 - cfg.alpha}, k=cfg.rrf_k
        )
    return fused[: ctx.limit]


def _nodes(ctx: SearchContext) -> list[dict]:
    """Summary-tree nodes most similar to the query, visible in the scope and not superseded."""
    old = set() if ctx.cfg.all_versions else set(ctx.reader.scopes.superseded)
    rows = ctx.knowledge_search("summaries", ctx.cfg.of(Settings).nodes * 4)
    return [r for r in rows if r["document_id"] not in old]


def expand(ctx: SearchContext, nodes: list[dict], discount: float, direct: dict[str, Hit]) -> list[Hit]:
    """Nodes → their best children at node similarity × ``discount``, merged with the direct matches.

    ``direct``: chunk hits scored by their own cosine. Children outside the prefilter are dropped; among
    one node's children the more similar come first (a tie-break far below the score scale).
    """
    ids = list(dict.fromkeys(i for n in nodes for i in n["chunk_ids"] if i not in direct))
    children = {h.chunk_id: h for h in ctx.hits_for([(i, 0.0) for i in ids])}
    children.update(direct)
    import numpy as np  # (80 ms to import: a strategy module loads nothing heavy until it runs)

    qv = np.asarray(ctx.query_vector(), dtype=np.float32)
    own = {i: _cosine(h.vector, qv) if h.vector is not None else 0.0 for i, h in children.items()}
    for i, h in direct.items():
        own[i] = h.score
    best: dict[str, float] = {i: own[i] for i in direct}
    for n in nodes:
        kids = sorted((i for i in n["chunk_ids"] if i in children), key=lambda i: -own[i])[
            : ctx.cfg.of(Settings).children
        ]
        for i in kids:
            score = n["similarity"] * discount + 1e-3 * own[i]
            if score > best.get(i, float("-inf")):
                best[i] = score
    out = []
    for i, score in sorted(best.items(), key=lambda kv: -kv[1]):
        h = children[i]
        h.score = float(score)
        out.append(h)
    return out


def _cosine(v, q: np.ndarray) -> float:
    import numpy as np

    v = np.asarray(v, dtype=np.float32)
    return float(v @ q / ((np.linalg.norm(v) * np.linalg.norm(q)) or 1.0))


def _item(n: dict) -> dict:
    return {
        "type": "summary",
        "id": n["id"],
        "level": int(n["level"]),
        "title": n["title"],
        "text": n["text"],
        "document_id": n["document_id"],
        "lines": [int(n["line_start"]), int(n["line_end"])],
        "chunks": len(n["chunk_ids"]),
        "similarity": round(float(n["similarity"]), 4),
    }
