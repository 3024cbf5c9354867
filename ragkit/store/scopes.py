"""Who may read what in one reader's index: the documents ``--filter`` and a caller's readable collections
allow (``scope_for``, ``doc_ids_for``), the chunks and documents of those collections, whether they mention an
entity or hold a word, which names are entities, and which documents newer versions replace
(``IndexReader.scopes``: kept for the reader's life, gone when it follows a newer run)."""

from __future__ import annotations

import re
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ragkit.records import Scope
from ragkit.store import expr
from ragkit.store.knowledge.sql import ALIASES_OF, ENTITIES_IN_GRAPH

if TYPE_CHECKING:
    from ragkit.store.committed import CommittedIndex

KNOWN_NAMES = 50_000  # names whose entity (or none) a reader remembers (``known_entities``)
HOLDS_WORD_CHUNKS = 20  # BM25 hits looked through for a word (stemming may find others first)


class Scopes:
    """The read scopes of ``reader``'s committed index."""

    def __init__(self, reader: CommittedIndex):
        self.reader = reader
        self._kept: dict[Any, frozenset[str]] = {}  # readable chunks and documents per set of collections
        self._entity_of: dict[str, str | None] = {}  # a name → its entity, None: none (``known_entities``)

    @cached_property
    def superseded(self) -> list[str]:
        """The documents a newer version replaces (left out of queries unless ``all_versions``)."""
        return self.reader.graph.superseded()

    def known_entities(self, keys: set[str], readable: tuple[str, ...] | None = None) -> list[str]:
        """Those of ``keys`` whose entity (a key, or the entity it is an alias of) the entity graph holds and
        the readable collections mention, sorted. Asked of the store until the graph is loaded (a query routed
        without it spares a one-shot query the graph's 2 s on all of federal law), 8 ms there per query, so
        each name's answer is kept for the reader's life (up to ``KNOWN_NAMES`` names)."""
        if not keys:
            return []
        graph = self.reader.loaded_entity_graph()
        if graph is not None:
            entity = {k: graph.aliases.get(k, k) for k in keys}
            entity = {k: e for k, e in entity.items() if graph.has_entity(e)}
        else:
            asked = sorted(k for k in keys if k not in self._entity_of)
            if asked:
                with self.reader.duck() as store:
                    marks = ", ".join("?" * len(asked))
                    aliases = {r["alias"]: r["entity"] for r in store.rows(ALIASES_OF.format(marks), asked)}
                    wanted = sorted({aliases.get(k, k) for k in asked})
                    marks = ", ".join("?" * len(wanted))
                    found = {r["entity"] for r in store.rows(ENTITIES_IN_GRAPH.format(marks), wanted)}
                if len(self._entity_of) > KNOWN_NAMES:
                    self._entity_of.clear()
                self._entity_of.update({k: aliases.get(k, k) if aliases.get(k, k) in found else None for k in asked})
            entity = {k: self._entity_of[k] for k in keys if self._entity_of.get(k)}
        return sorted(k for k, e in entity.items() if self.entity_readable(e, readable))

    def scope_for(self, filters: dict[str, str], readable: tuple[str, ...] | None = None) -> Scope | None:
        """The documents (and their collections) the filters allow within the readable collections; None
        without filters and without ``readable`` (everything is visible)."""
        if not filters and readable is None:
            return None
        with self.reader.duck() as store:
            ids = store.document_ids_matching(filters)
            with store.registered("scope_ids", {"id": ids}):
                scope, params = expr.readable(readable).duck()
                rows = store.con.execute(
                    f"SELECT id, collection FROM documents WHERE id IN (SELECT id FROM scope_ids) AND {scope}", params
                ).fetchall()
        return Scope({r[0] for r in rows}, {r[1] for r in rows})

    def readable_chunks(self, readable: tuple[str, ...]) -> frozenset[str]:
        """The ids of the chunks of the readable collections (kept per set of collections)."""
        key = ("readable_chunks", tuple(sorted(set(readable))))
        if key not in self._kept:
            ids = self.reader.chunks.ds.to_table(columns=["id"], filter=expr.readable(readable).lance()).column("id")
            self._kept[key] = frozenset(ids.to_pylist())
        return self._kept[key]

    def readable_documents(self, readable: tuple[str, ...]) -> frozenset[str]:
        """The ids of the documents of the readable collections (kept per set of collections)."""
        key = ("readable_documents", tuple(sorted(set(readable))))
        if key not in self._kept:
            with self.reader.duck() as store:
                scope, params = expr.readable(readable).duck()
                rows = store.con.execute(f"SELECT id FROM documents WHERE {scope}", params).fetchall()
            self._kept[key] = frozenset(r[0] for r in rows)
        return self._kept[key]

    def entity_readable(self, key: str, readable: tuple[str, ...] | None) -> bool:
        """Whether a chunk of the readable collections mentions the entity (always, for ``None``)."""
        if readable is None:
            return True
        chunks = self.readable_chunks(readable)
        return any(c in chunks for c in self.reader.entity_graph.chunks_of(key))

    def holds_word(self, word: str, readable: tuple[str, ...] | None) -> bool:
        """Whether a chunk of the readable collections holds ``word`` as a whole word (any case); the index's
        vocabulary spans every collection, this asks the BM25 index within the readable ones."""
        if readable is None:
            return word.lower() in self.reader.vocabulary
        pattern = re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.I)
        rows = self.reader.chunks.fts_search(word, HOLDS_WORD_CHUNKS, expr.readable(readable).lance())
        return any(pattern.search(r["content"]) for r in rows)

    def doc_ids_for(self, filters: dict[str, str], readable: tuple[str, ...] | None = None) -> list[str]:
        """The documents matching the filters (``--filter``), of the readable collections only if given."""
        with self.reader.duck() as store:
            ids = store.document_ids_matching(filters)
            if readable is None:
                return ids
            with store.registered("matching_ids", {"id": ids}):
                scope, params = expr.readable(readable).duck()
                sql = f"SELECT id FROM documents WHERE id IN (SELECT id FROM matching_ids) AND {scope}"
                return [r[0] for r in store.con.execute(sql, params).fetchall()]
