"""The knowledge graph's tables in a run's DuckDB store, read and written through it: entities, their
relations and communities, counts of references and communities, and the summaries ``--summaries llm`` writes
(``DuckStore.knowledge``; the SQL that builds them is ragkit/store/knowledge/sql.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragkit.store.knowledge.reports import community_reports
from ragkit.store.knowledge.sql import ENTITY_NAME, ENTITY_TYPE, pair_rows, with_descriptions
from ragkit.text import entity_key

if TYPE_CHECKING:
    from ragkit.store.connection import DuckConnection


class KnowledgeTables:
    """``store``'s knowledge graph (its connection, its transaction: ``DuckStore.knowledge``)."""

    def __init__(self, store: DuckConnection):
        self.store = store

    def graph_tables(self) -> dict[str, list[dict[str, Any]]]:
        """References detected and resolved per kind, communities per level, knowledge per collection."""
        return {
            "references": self.store.rows(
                "SELECT kind, count(*) AS detected, count(resolved_document_id) AS resolved_document, "
                "count(resolved_section_id) AS resolved_section FROM refs GROUP BY kind ORDER BY kind"
            ),
            "communities": self.store.rows(
                "SELECT level, count(*) AS communities, CAST(avg(size) AS DOUBLE) AS mean_size "
                "FROM communities GROUP BY level ORDER BY level"
            ),
            "knowledge": self.store.rows(
                "SELECT collection, (SELECT count(*) FROM entities e WHERE e.collection = d.collection) AS entities, "
                "(SELECT count(*) FROM relations r WHERE r.collection = d.collection) AS relations, "
                "(SELECT count(*) FROM communities c WHERE c.collection = d.collection) AS communities "
                "FROM (SELECT DISTINCT collection FROM documents) d ORDER BY collection"
            ),
        }

    def pending_summaries(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Tree nodes and community reports still extractive (for ``--summaries llm`` after a commit)."""
        nodes = self.store.rows(
            "SELECT s.id, s.title, s.text, s.chunk_ids, list(c.text ORDER BY c.chunk_index) AS texts "
            "FROM summaries s, unnest(s.chunk_ids) AS u(cid) JOIN chunks c ON c.id = u.cid "
            "WHERE s.method = 'extractive' GROUP BY ALL ORDER BY s.id"
        )

        reports = community_reports(
            self.store,
            self.store.rows(
                "SELECT id, collection, level, parent_id, title, top_entities, written FROM communities "
                "WHERE written IS NULL ORDER BY id"
            ),
        )
        return nodes, reports

    def write_summaries(self, nodes: dict[str, tuple[str, Any]], reports: dict[str, str]) -> None:
        """Store LLM-written summaries: node id → (text, vector), community id → text (above its report)."""
        with self.store.transaction():
            for node_id, (text, vector) in nodes.items():
                self.store.con.execute(
                    "UPDATE summaries SET text = ?, method = 'llm', vector = ? WHERE id = ?",
                    [text, [float(x) for x in vector] if vector is not None else None, node_id],
                )
            for cid, text in reports.items():
                self.store.con.execute("UPDATE communities SET written = ? WHERE id = ?", [text, cid])

    def relation_rows(self, pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        """These entity pairs as relations (every collection), aggregated from their co-occurrences whether or
        not the ``relations`` view keeps them (``ragkit show``, graph context of known pairs)."""
        if not pairs:
            return []

        with self.store.registered("wanted", {"a": [a for a, _ in pairs], "b": [b for _, b in pairs]}):
            return pair_rows(self.store, "JOIN wanted p ON p.a = r.a AND p.b = r.b")

    def entity_rows(self, keys: list[str]) -> list[dict[str, Any]]:
        """Key, collection, name and type of these entities (every collection), with their descriptions (from
        their mentions only: the ``entities`` view aggregates every mention)."""
        if not keys:
            return []
        with self.store.registered("ekeys", {"k": keys}):
            rows = self.store.rows(
                f"SELECT m.entity AS key, d.collection, {ENTITY_NAME} AS name, {ENTITY_TYPE} AS type "
                "FROM mentions m JOIN documents d ON d.id = m.document_id "
                "WHERE m.entity IN (SELECT k FROM ekeys) GROUP BY m.entity, d.collection"
            )
        return with_descriptions(self.store, rows)

    def community_chunks(self, community_ids: list[str], limit: int) -> list[tuple[str, int]]:
        """(chunk id, member mentions) of the chunks that mention the communities' entities, most first."""
        if not community_ids:
            return []
        marks = ", ".join("?" for _ in community_ids)
        return self.store.con.execute(
            f"SELECT m.chunk_id, count(*) AS n FROM mentions m JOIN community_members cm ON cm.entity = m.entity "
            f"WHERE cm.community_id IN ({marks}) GROUP BY m.chunk_id ORDER BY n DESC, m.chunk_id LIMIT ?",
            [*community_ids, limit],
        ).fetchall()

    def entity(self, name: str, limit: int = 10) -> dict[str, Any] | None:
        """One entity (by key, alias or surface): per-collection rows, strongest relations, source chunks."""
        key = entity_key(name)
        found = self.store.first(
            "SELECT key FROM entities WHERE key = ? OR list_has_any(aliases, [?, ?]) "
            "GROUP BY key ORDER BY (key = ?) DESC, sum(mentions) DESC LIMIT 1",
            [key, name, key, key],
        )
        if not found:
            return None
        key = found[0]
        rows = with_descriptions(
            self.store,
            self.store.rows(
                "SELECT key, collection, name, type, aliases, mentions, chunks, "
                "documents FROM entities WHERE key = ? ORDER BY mentions DESC",
                [key],
            ),
        )
        for r in rows:
            del r["key"], r["source_documents"]
        info = {
            "entity": key,
            "name": rows[0]["name"],
            "type": rows[0]["type"],
            "aliases": sorted({a for r in rows for a in r["aliases"]}),
            "mentions": sum(r["mentions"] for r in rows),
            "chunks": sum(r["chunks"] for r in rows),
            "collections": rows,
        }
        rels = pair_rows(self.store, where="r.a = ? OR r.b = ?", params=[key, key])
        info["relations"] = [
            {
                "other": r["b"] if r["a"] == key else r["a"],
                "collection": r["collection"],
                "weight": r["weight"],
                "description": r["description"],
            }
            for r in sorted(rels, key=lambda r: (-r["weight"], r["a"], r["b"]))[:limit]
        ]
        info["sources"] = self.store.rows(
            "SELECT DISTINCT d.path, d.collection, c.header, c.line_start, c.line_end FROM mentions m "
            "JOIN chunks c ON c.id = m.chunk_id JOIN documents d ON d.id = m.document_id "
            "WHERE m.entity = ? ORDER BY d.path, c.line_start LIMIT ?",
            [key, limit],
        )
        return info
