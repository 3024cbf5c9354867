"""The knowledge rows the graph strategies read per query, for one-shot and for warm readers.

``StoreRows`` reads what a query needs from DuckDB (a few targeted SQL look-ups, 5–25 ms each on SciFact);
``KnowledgeMemory`` holds the same rows in memory, read once by the same SQL without a filter and indexed by
key, so that a warm reader (a session, a server, an eval loop) answers them with dictionary look-ups. A
reader switches to memory on its second query (``IndexReader.knowledge_rows``): a one-shot process never
pays the load (~0.5 s and ~40 MB on SciFact), a warm one pays it once.

Both give the same rows: entity name/type/description rows, relation rows of known pairs, each community's
strongest inner relations (for its report) and the chunks that mention a community's members.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from ragkit.store.knowledge.reports import REPORT_RELATIONS, community_reports, write_reports
from ragkit.store.knowledge.sql import (
    ENTITY_NAME,
    ENTITY_TYPE,
    describe,
    mention_sentences,
    pair_rows,
    with_descriptions,
)

# a reader's ``duck``: the store's connection as a ``with`` block (the query's shared one, ragkit/store/committed.py)
Ducks = Callable[[], AbstractContextManager[Any]]

ENTITY_NAMES = (
    f"SELECT m.entity AS key, d.collection, {ENTITY_NAME} AS name, {ENTITY_TYPE} AS type "
    "FROM mentions m JOIN documents d ON d.id = m.document_id WHERE {where} GROUP BY m.entity, d.collection"
)


def _entity_order(r: dict[str, Any]) -> tuple:
    return r["key"], r["collection"] or ""


def _relation_order(r: dict[str, Any]) -> tuple:  # a pair's strongest collection first
    return r["a"], r["b"], -float(r["weight"]), r["collection"] or ""


class StoreRows:
    """Per-query look-ups in the store (``duck``: the reader's shared connection of the query). Entity and
    relation rows come in a fixed order (a pair seen in several collections: its strongest first), as from
    memory."""

    def __init__(self, duck: Ducks):
        self.duck = duck

    def entity_rows(self, keys: list[str]) -> list[dict[str, Any]]:
        with self.duck() as store:
            return sorted(store.knowledge.entity_rows(keys), key=_entity_order)

    def describe(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        with self.duck() as store:
            return with_descriptions(store, rows)

    def relation_rows(self, pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        with self.duck() as store:
            return sorted(store.knowledge.relation_rows(pairs), key=_relation_order)

    def community_reports(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        with self.duck() as store:
            return community_reports(store, rows)

    def community_chunks(self, community_ids: list[str], limit: int) -> list[tuple[str, int]]:
        with self.duck() as store:
            return store.knowledge.community_chunks(community_ids, limit)


class KnowledgeMemory:
    """Every knowledge row of the committed run a query may ask for, indexed by key (see the module)."""

    def __init__(self, store):
        self.report_relations = REPORT_RELATIONS
        self.sentences = mention_sentences(store)  # (key, collection) → mention sentences
        self._described: dict[tuple[str, str], tuple[str, list[str]]] = {}  # descriptions written so far
        self.names: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in store.rows(ENTITY_NAMES.format(where="true")):
            self.names[r["key"]].append(r)
        self.pairs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)  # one row per collection
        self.adjacent: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for r in pair_rows(store):
            if not self.pairs[(r["a"], r["b"])]:
                self.adjacent[r["a"]].append((r["a"], r["b"]))
                self.adjacent[r["b"]].append((r["a"], r["b"]))
            self.pairs[(r["a"], r["b"])].append(r)
        self.members: dict[str, list[str]] = defaultdict(list)
        self.collection_of: dict[str, str] = {}
        for cid, coll, entity in store.con.execute(
            "SELECT m.community_id, c.collection, m.entity FROM community_members m "
            "JOIN communities c ON c.id = m.community_id"
        ).fetchall():
            self.members[cid].append(entity)
            self.collection_of[cid] = coll
        rows = store.con.execute("SELECT entity, chunk_id, count(*) FROM mentions GROUP BY entity, chunk_id").fetchall()
        self.chunk_ids = sorted({chunk_id for _, chunk_id, _ in rows})  # a position orders ties as the id does
        position = {chunk_id: i for i, chunk_id in enumerate(self.chunk_ids)}
        self.chunk_mentions: dict[str, list[tuple[int, int]]] = defaultdict(list)  # entity → (position, mentions)
        for entity, chunk_id, n in rows:
            self.chunk_mentions[entity].append((position[chunk_id], n))
        self._community_counts: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # built when first asked for

    def entity_rows(self, keys: list[str]) -> list[dict[str, Any]]:
        return self.describe(
            sorted((dict(r) for k in dict.fromkeys(keys) for r in self.names.get(k, ())), key=_entity_order)
        )

    def describe(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        wanted = {(r["key"], r["collection"]) for r in rows} - self._described.keys()
        self._described.update(describe({kc: self.sentences.get(kc, []) for kc in wanted}))
        for r in rows:
            r["description"], r["source_documents"] = self._described.get((r["key"], r["collection"]), ("", []))
        return rows

    def relation_rows(self, pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return sorted((dict(r) for p in dict.fromkeys(pairs) for r in self.pairs.get(p, ())), key=_relation_order)

    def community_reports(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        edges = {}
        for r in rows:
            inside, coll = set(self.members.get(r["id"], ())), self.collection_of.get(r["id"])
            found = {p for m in inside for p in self.adjacent.get(m, ()) if p[0] in inside and p[1] in inside}
            inner = [e for p in found for e in self.pairs[p] if e["collection"] == coll]
            inner.sort(key=lambda e: (-e["weight"], e["a"], e["b"]))
            edges[r["id"]] = [
                {k: e[k] for k in ("a", "b", "weight", "source_document", "description")}
                for e in inner[: self.report_relations]
            ]
        return write_reports(rows, edges)

    def community_chunks(self, community_ids: list[str], limit: int) -> list[tuple[str, int]]:
        counts = np.zeros(len(self.chunk_ids), dtype=np.int64)
        for cid in dict.fromkeys(community_ids):  # a member of two chosen communities counts twice, as in SQL
            positions, n = self._community(cid)
            counts[positions] += n
        found = np.flatnonzero(counts)
        top = found[np.lexsort((found, -counts[found]))][:limit]  # most mentions first, ties by chunk id
        return [(self.chunk_ids[i], int(counts[i])) for i in top]

    def _community(self, cid: str) -> tuple[np.ndarray, np.ndarray]:
        """The chunks mentioning a community's members (positions in ``chunk_ids``) and their mention counts."""
        if cid not in self._community_counts:
            total: Counter = Counter()
            for entity in self.members.get(cid, ()):
                for chunk, n in self.chunk_mentions.get(entity, ()):
                    total[chunk] += n
            self._community_counts[cid] = (
                np.fromiter(total.keys(), dtype=np.int64, count=len(total)),
                np.fromiter(total.values(), dtype=np.int64, count=len(total)),
            )
        return self._community_counts[cid]
