"""What a strategy gets: the index, the parsed query, the prefilter, the config."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

from ragkit.extract.entities import query_entities
from ragkit.reader import IndexReader
from ragkit.records import Hit, Scope
from ragkit.retrieve.config import QueryConfig
from ragkit.retrieve.fusion import convex, weighted_rrf, with_graph
from ragkit.retrieve.query_syntax import ParsedQuery
from ragkit.retrieve.tiers import MAX_OVERFETCH, SAMPLE, merge, zscores
from ragkit.store.expr import Prefilter
from ragkit.store.lance_rows import to_hits
from ragkit.text import compound_parts

_POOLS: dict[int, ThreadPoolExecutor] = {}  # process id → the thread of a large table's vector search


def _pool() -> ThreadPoolExecutor:
    """This process's thread for ``text_rankings`` (one per process: a forked server worker starts its own)."""
    pid = os.getpid()
    if pid not in _POOLS:
        _POOLS[pid] = ThreadPoolExecutor(1, thread_name_prefix="ragkit-dense")
    return _POOLS[pid]


COMMON_PART = 0.2  # a compound's part in more than this share of the chunks is left out of the BM25 query

VECTOR_SEED_MIN = 0.5  # cosine: below this a nearest entity is not what the query names


def _sources(kind: str, row: dict) -> list[str]:
    """The documents the text of a knowledge row comes from."""
    if kind == "relations":
        return [row["source_document"]]
    if kind == "summaries":
        return [row["document_id"]]
    return row.get("source_documents", [])


def _bare(chunk_id: str, score: float, vector=None) -> Hit:
    """A hit known by its id, score and (maybe) vector only, until ``SearchContext.complete`` reads its row."""
    return Hit(chunk_id, "", "", 0, "", "", "", "", "", "", 0, 0, 0, score=score, vector=vector)


@dataclass
class SearchContext:
    reader: IndexReader
    query: ParsedQuery
    prefilter: Prefilter  # what every search of the chunks is limited to (ragkit/store/expr.py)
    limit: int  # chunk hits wanted from the strategy
    cfg: QueryConfig
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: dict = field(default_factory=dict)  # strategy remarks for the plan (seeds, fallback)
    context_items: list = field(default_factory=list)  # entities, relations, community reports
    scope: Scope | None = None  # None: no filters, everything is visible
    language: str | None = None  # the question's (the plan's): which query encoder reads it
    _qvec: object = field(default=None, repr=False)
    _found: dict = field(default_factory=dict, repr=False)  # (list, limit) → rows of this query's text
    _lean: dict = field(default_factory=dict, repr=False)  # chunk id → (Lance row id, score): ``text_rankings``

    @property
    def never(self) -> bool:
        """No document can match the filters: nothing is searched."""
        return self.prefilter.never

    @property
    def where(self) -> str | None:
        """The prefilter as Lance's filter string (values quoted by ``Clause.lance``); None when unfiltered."""
        return None if self.prefilter.never else self.prefilter.lance()

    def visible(self, collection: str | None, source_documents) -> bool:
        return self.scope is None or self.scope.allows(collection, source_documents)

    def knowledge_search(self, kind: str, limit: int, describe: bool = True) -> list[dict]:
        """Entities, relations or communities most similar to the query, within the scope; ``describe``
        False skips writing entity descriptions and community reports (a caller that only ranks)."""
        vec = self.query_vector()
        with self.timed(kind):
            rows = self.reader.knowledge.search(
                kind,
                vec,
                limit * 2 if self.scope else limit,
                self.scope.collections if self.scope else None,
                describe=describe or self.scope is not None,
            )
        rows = [r for r in rows if self.visible(r["collection"], _sources(kind, r))]
        return rows[:limit]

    @property
    def made_vector(self):
        """The query's embedding if a search made one (None after a lexical-only query)."""
        return self._qvec

    def query_embedder(self):
        """The embedder of this question (the index's own, or ragkit's query encoder: QueryConfig.query_encoder)."""
        return self.reader.query_embedder(self.cfg.query_encoder, self.language)

    def query_vector(self):
        if self._qvec is None:
            with self.timed("load_model"):
                embedder = self.query_embedder()  # loads once per process
            with self.timed("embed_query"):
                self._qvec = embedder.encode_query(self.query.text)
            self.notes["query_encoder"] = getattr(embedder, "query_encoder", embedder.name)  # who read the question
        return self._qvec

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            self.timings_ms[stage] = self.timings_ms.get(stage, 0.0) + (time.perf_counter() - t) * 1000

    def dense(self, limit: int) -> list[Hit]:
        if self.never:
            return []
        if ("dense", limit) not in self._found:  # strategies may ask twice (seeding, then fusion), a retry again
            vec = self.query_vector()
            fill = self.reader.fill
            with self.timed("dense"):
                if fill is None or not fill.rows:
                    self._found["dense", limit] = self.reader.chunks.vector_search(vec, limit, self.where)
                else:
                    self._found["dense", limit] = self._both_tiers(vec, limit, fill)
        return to_hits(self._found["dense", limit], "dense")

    def _both_tiers(self, vec, limit: int, fill) -> list[dict]:
        """A progressive index being filled: the full model's nearest among the chunks filled so far and the
        fast model's among the rest, merged by how far each stands above its tier's typical chunk
        (``tiers.merge``)."""
        filled = fill.ids()
        total = max(self.reader.chunks.count(), 1)
        rest_share = max(1.0 - len(filled) / total, 0.0)
        fetch = min(limit * MAX_OVERFETCH, int(limit / max(rest_share, 1.0 / MAX_OVERFETCH)) + 1)
        fast = [r for r in self.reader.chunks.vector_search(vec, fetch, self.where) if r["id"] not in filled][:limit]
        with self.timed("embed_query_full"):
            full_vec = self.reader.full_embedder.encode_query(self.query.text)
        pairs = fill.search(full_vec, limit * MAX_OVERFETCH if self.where else limit)  # (a prefilter drops some)
        rows = {r["id"]: r for r in self.reader.chunks.by_ids([i for i, _ in pairs], self.where)}
        full = [(rows[i], cos) for i, cos in pairs if i in rows][:limit]
        fast_z = zscores([1.0 - r["_distance"] for r in fast], self.reader.chunks.sample(SAMPLE), vec)
        full_z = zscores([cos for _, cos in full], fill.sample(SAMPLE), full_vec)
        return merge(fast, fast_z, [r for r, _ in full], full_z, limit)

    def hits_for(self, ranked: list[tuple[str, float]]) -> list[Hit]:
        """Hits for (chunk id, score) pairs, in that order, dropping chunks the prefilter excludes."""
        ids = [cid for cid, _ in ranked]
        if not ids or self.never:
            return []
        rows = self.reader.chunks.by_ids(ids, self.where)
        for r in rows:
            r["_score"] = 0.0
        by_id = {h.chunk_id: h for h in to_hits(rows, "lexical")}
        out = []
        for cid, score in ranked:
            if cid in by_id:
                by_id[cid].score = float(score)
                out.append(by_id[cid])
        return out

    def entity_seeds(self, vector_seeds: int = 0) -> dict[str, float]:
        """Query entities the entity graph knows, IDF-weighted; a longer name covers its own words.

        ``vector_seeds``: also up to this many nearest entities by their (derived) vectors whose
        similarity reaches ``VECTOR_SEED_MIN``, weighted by similarity × IDF.
        """
        graph = self.reader.entity_graph
        with self.timed("entities"):
            seeds = graph.seeds([k for k, _ in query_entities(self.query.text)])
            if self.cfg.readable is not None:  # a served token's query: entities its collections mention
                seeds = {k: w for k, w in seeds.items() if self.reader.scopes.entity_readable(k, self.cfg.readable)}
            seeds = {k: w for k, w in seeds.items() if not any(k != o and f" {k} " in f" {o} " for o in seeds)}
        if vector_seeds:
            for row in self.knowledge_search("entities", vector_seeds, describe=False):
                if row["similarity"] < VECTOR_SEED_MIN:
                    break
                idf = graph.seeds([row["key"]]).get(row["key"], 0.0)
                seeds[row["key"]] = max(seeds.get(row["key"], 0.0), row["similarity"] * idf)
        self.notes["seed_entities"] = sorted(seeds, key=lambda k: -seeds[k])[:10]
        return seeds

    @staticmethod
    def entity_item(row: dict, score: float) -> dict:
        """A context item for an entities row."""
        return {
            "type": "entity",
            "entity": row["key"],
            "name": row["name"],
            "entity_type": row["type"],
            "collection": row["collection"],
            "description": row["description"] or "",
            "score": round(float(score), 4),
        }

    @staticmethod
    def relation_item(row: dict, score: float) -> dict:
        """A context item for a relations row."""
        return {
            "type": "relation",
            "source": row["a"],
            "target": row["b"],
            "collection": row["collection"],
            "weight": round(float(row["weight"]), 4),
            "description": row["description"] or "",
            "score": round(float(score), 4),
        }

    def fuse_with_text(self, name: str, graph_hits: list[Hit], fetch: int, weight: float) -> list[Hit]:
        """A graph ranking (``weight``) fused with the text ranking (the rest): by default its scores added to
        the convex fusion of dense and BM25 (``fusion.with_graph``); with ``fusion = "rrf"`` weighted RRF of the
        three lists, dense and BM25 sharing the rest by alpha."""
        dense = self.dense(fetch)
        lexical = self.lexical(fetch)
        rest = 1 - weight
        with self.timed("fusion"):
            if self.cfg.fusion == "rrf":
                fused = weighted_rrf(
                    {name: graph_hits, "dense": dense, "lexical": lexical},
                    {name: weight, "dense": rest * self.cfg.alpha, "lexical": rest * (1 - self.cfg.alpha)},
                    k=self.cfg.rrf_k,
                )
            else:
                text = convex(dense, lexical, self.cfg.alpha, self.query_vector())
                fused = with_graph(text, graph_hits, name, weight)
        return fused[: self.limit]

    def lexical(self, limit: int) -> list[Hit]:
        if self.never:
            return []
        if ("lexical", limit) not in self._found:
            with self.timed("lexical"):
                self._found["lexical", limit] = self.reader.chunks.fts_search(
                    self.query.text, limit, self.where, self._parts()
                )
        return to_hits(self._found["lexical", limit], "lexical")

    def _parts(self) -> list[str] | None:
        """The query's compounds' parts BM25 also looks for (an index of German or Swedish)."""
        language = self.reader.chunks.compounds  # "de"/"sv": the index holds compounds' parts
        parts = compound_parts(self.query.text, language, query=True) if language else None
        if parts:  # a part most chunks hold ("über" of "Betriebsübergang": 59 % of federal law's) adds
            # nothing to BM25 and tripled its time (scripts/README.md "All of German federal law")
            vocab, n = self.reader.vocabulary, max(self.reader.chunks.count(), 1)
            parts = [p for p in parts if vocab.get(p, 0) <= COMMON_PART * n]
        return parts

    def text_rankings(self, limit: int) -> tuple[list[Hit], list[Hit]]:
        """The dense and the BM25 ranking of ``limit`` hits each, to be fused and cut (``complete`` then gives
        the hits kept their rows). On a large table searched by its vector index (no tier being filled) both
        come as ids, scores and, for chunks only BM25 found, vectors, the vector search in a thread beside BM25:
        the rows of the few hits a query keeps are read once, not those of all 2 × ``limit`` (all of federal law:
        a hybrid query's p50 41 → 30 ms; the thread 32.7 → 28.1 ms, scripts/README.md)."""
        chunks, fill = self.reader.chunks, self.reader.fill
        if self.never or chunks.exact or (fill is not None and fill.rows):
            return self.dense(limit), self.lexical(limit)
        vec = self.query_vector()

        def nearest():
            with self.timed("dense"):
                return chunks.nearest_ids(vec, limit, self.where)

        dense_search = _pool().submit(nearest)  # beside BM25: Lance leaves the interpreter while it searches
        with self.timed("lexical"):
            lexical = chunks.bm25_ids(self.query.text, limit, self.where, self._parts())
        dense = dense_search.result()
        with self.timed("lexical"):
            near = {row_id for row_id, _, _ in dense}
            alone = [row_id for row_id, _, _ in lexical if row_id not in near]
            vectors = dict(zip(alone, chunks.vectors_at(alone)))
        self._lean = {cid: (row_id, score) for row_id, cid, score in dense + lexical}
        return (
            [_bare(cid, score) for _, cid, score in dense],
            [_bare(cid, score, vectors.get(row_id)) for row_id, cid, score in lexical],
        )

    def complete(self, hits: list[Hit]) -> list[Hit]:
        """Hits of ``text_rankings`` with their rows (the fused score, ranks and scores kept)."""
        if not self._lean:
            return hits
        with self.timed("rows"):
            rows = self.reader.chunks.rows_at([(self._lean[h.chunk_id][0], h.chunk_id, 0.0) for h in hits])
            for row in rows:
                row["_score"] = 0.0  # the fused score is the hit's
            full = to_hits(rows, "lexical")
        out = []
        for hit, row in zip(hits, full):
            keep = {"score": hit.score, "ranks": hit.ranks, "scores": hit.scores}
            out.append(Hit(**{**row.__dict__, **keep}))
        return out
