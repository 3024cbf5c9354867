"""Canonical entities, relations and communities over the extraction rows (SQL, no inference, no copies).

The extraction rows (``mentions``, ``cooccur``, ``aliases``, per chunk and
document) are what is stored; over them the store defines views:

- ``alias_map``: alias key → the entity most documents declare it for;
- ``entities``: one row per entity key and collection, with its display name,
  type, aliases (surfaces and alias keys), mention/chunk/document counts;
- ``cooc`` / ``relations``: co-occurring pairs with alias keys mapped; a
  relation is one pair per collection with summed weight, its chunk count and
  its strongest sentence. Each entity keeps at most ``RELATIONS_PER_ENTITY``
  relations (its strongest: a pair stays when it is among the strongest of
  either entity), so relations grow with the text, never with the square of the
  names in it.

Only ``communities`` / ``community_members`` are computed and stored (Leiden per
collection, starting from the previous partition; a community whose members are
unchanged and untouched keeps its id). Nothing here is embedded and no text is
copied: descriptions are the sentences of the chunk text that mention an entity
(``describe_entities``), a relation's description is its sentence, a
community's report is written from its members' relations when it is shown
(``community_reports``, ragkit/store/knowledge/reports.py), and the vectors of entities, relations, communities
and tree nodes are derived from the chunk vectors when a query first needs them
(ragkit/store/knowledge/vectors.py). With ``--summaries llm`` a report's written summary
is stored with it after the commit (``DuckStore.knowledge.write_summaries``).
Descriptions and reports are built per collection, so a query scoped to one
collection never sees text from another; for other filters each row names the
documents its text comes from and readers drop rows built from excluded
documents.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ragkit.records import Community
from ragkit.text import entity_key

# clusters one collection's relations (rows of a, b, weight), starting from a previous partition (entity → label)
Detect = Callable[..., list[Community]]

DESCRIPTION_SENTENCES = 2
DESCRIPTION_CHARS = 400
RELATIONS_PER_ENTITY = 20


def strongest(t: str = "") -> str:
    """SQL: a pair's strongest co-occurrence (``t``: the cooc alias with its dot), every field from that one
    row (ties: the largest chunk id)."""
    fields = ", ".join(f"'{f}': {t}{f}" for f in ("document_id", "chunk_id", "sent_start", "sent_end", "note"))
    return f"arg_max({{{fields}}}, ({t}weight, {t}chunk_id))"


# an entity's display name and type over its mentions ``m`` (the entities view and key look-ups)
ENTITY_NAME = "mode(m.surface)"
ENTITY_TYPE = "coalesce(mode(m.type) FILTER (WHERE m.type NOT IN ('acronym', 'name', 'term', 'title')), mode(m.type))"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS mentions (
    chunk_id VARCHAR, document_id VARCHAR, entity VARCHAR, raw VARCHAR, surface VARCHAR, type VARCHAR,
    sent_start INTEGER, sent_end INTEGER
);
CREATE TABLE IF NOT EXISTS cooccur (
    chunk_id VARCHAR, document_id VARCHAR, collection VARCHAR, a VARCHAR, b VARCHAR, raw_a VARCHAR, raw_b VARCHAR,
    weight FLOAT, sent_start INTEGER, sent_end INTEGER, note VARCHAR
);
CREATE TABLE IF NOT EXISTS aliases (document_id VARCHAR, alias VARCHAR, entity VARCHAR);
CREATE TABLE IF NOT EXISTS communities (
    id VARCHAR PRIMARY KEY, collection VARCHAR, level INTEGER, parent_id VARCHAR, title VARCHAR, size INTEGER,
    top_entities VARCHAR[], written VARCHAR
);
CREATE TABLE IF NOT EXISTS community_members (community_id VARCHAR, entity VARCHAR);
CREATE OR REPLACE VIEW alias_map AS
SELECT alias, arg_max(entity, n) AS entity FROM (SELECT alias, entity, count(DISTINCT document_id) AS n
FROM aliases WHERE alias <> entity GROUP BY alias, entity) GROUP BY alias;
CREATE OR REPLACE VIEW entities AS
SELECT m.entity AS key, d.collection, {ENTITY_NAME} AS name, {ENTITY_TYPE} AS type,
       list_sort(list_distinct(list(m.surface) || coalesce(first(al.aliases), []))) AS aliases,
       count(*) AS mentions, count(DISTINCT m.chunk_id) AS chunks, count(DISTINCT m.document_id) AS documents
FROM mentions m JOIN documents d ON d.id = m.document_id
LEFT JOIN (SELECT entity, list(alias ORDER BY alias) AS aliases FROM alias_map GROUP BY entity) al ON al.entity = m.entity
GROUP BY m.entity, d.collection;
CREATE OR REPLACE VIEW cooc AS
SELECT chunk_id, document_id, collection, least(a, b) AS a, greatest(a, b) AS b, weight, sent_start, sent_end, note
FROM cooccur WHERE a <> b;
CREATE OR REPLACE VIEW pairs AS
SELECT a, b, collection, weight, chunks, best.document_id AS source_document, best.chunk_id AS source_chunk,
       best.sent_start, best.sent_end, best.note
FROM (SELECT a, b, collection, sum(weight) AS weight, count(DISTINCT chunk_id) AS chunks, {strongest()} AS best
      FROM cooc GROUP BY a, b, collection);
CREATE OR REPLACE VIEW relations AS
WITH ends AS (SELECT a AS e, b AS o, collection, weight FROM pairs UNION ALL SELECT b, a, collection, weight FROM pairs),
ranked AS (SELECT e, o, collection, row_number() OVER (PARTITION BY e, collection ORDER BY weight DESC, o) AS r
           FROM ends),
kept AS (SELECT DISTINCT least(e, o) AS a, greatest(e, o) AS b, collection FROM ranked WHERE r <= {RELATIONS_PER_ENTITY})
SELECT p.* FROM pairs p JOIN kept USING (a, b, collection);
"""

# alias key → the entity most documents declare it for
ALIAS_MAP = "SELECT alias, entity FROM alias_map"
ALIASES_OF = "SELECT alias, entity FROM alias_map WHERE alias IN ({})"
# those of a list of entities the entity graph has a vertex for (EntityGraph.from_store: mentions and relations;
# a relation joins two entities a sentence mentions, so the mentions hold them all. Reading the relations view
# for them took 0.4 s on all of federal law)
ENTITIES_IN_GRAPH = "SELECT DISTINCT entity FROM mentions WHERE entity IN ({})"


def touched_by_documents(store, doc_ids: list[str]) -> set[str]:
    """Entity keys mentioned by these documents (call before deleting them)."""
    if not doc_ids:
        return set()
    with store.registered("touch_docs", {"id": doc_ids}):
        return {
            r[0]
            for r in store.con.execute(
                "SELECT DISTINCT entity FROM mentions WHERE document_id IN (SELECT id FROM touch_docs)"
            ).fetchall()
        }


def refresh(store, touched: set[str] | None, collections: set[str] | None, detect: Detect) -> dict[str, int]:
    """Map alias mentions to their entities and re-cluster communities (entities and relations are views):
    ``detect`` clusters a collection's relations (ragkit/extract/communities.py, given by the commit).

    ``touched``: entity keys the run's changed or removed documents mention (``None``: everything changed);
    communities of untouched members keep their ids. ``collections``: collections whose documents changed
    (``None``: all) — only their communities are re-clustered. Returns row counts.
    """
    con = store.con
    remapped = _remap_aliases(store)
    if touched is not None:
        touched = touched | remapped
    if collections is None or touched is None:
        collections = {r[0] for r in con.execute("SELECT DISTINCT collection FROM documents").fetchall()}
    changed = _communities(store, collections, touched, detect)
    return {
        "entities": store.value("SELECT count(*) FROM entities"),
        "relations": store.value("SELECT count(*) FROM relations"),
        "communities": changed,
    }


def _remap_aliases(store) -> set[str]:
    """Map mentions of alias keys ("who") to their entity ("world health organization").

    An alias declared by several documents maps to the entity most documents
    give it. Returns the keys whose mentions moved (both sides).
    """
    con = store.con
    con.execute("CREATE OR REPLACE TEMP TABLE amap AS " + ALIAS_MAP)  # fixed while mentions change
    moved = con.execute(
        "SELECT DISTINCT m.entity, coalesce(am.entity, m.raw) FROM mentions m LEFT JOIN amap am ON am.alias = m.raw "
        "WHERE m.entity IS DISTINCT FROM coalesce(am.entity, m.raw)"
    ).fetchall()
    if moved:
        con.execute("UPDATE mentions SET entity = raw WHERE entity <> raw AND raw NOT IN (SELECT alias FROM amap)")
        con.execute(
            "UPDATE mentions SET entity = amap.entity FROM amap "
            "WHERE mentions.raw = amap.alias AND mentions.entity <> amap.entity"
        )
    for end in ("a", "b"):  # co-occurrences follow (their ``raw_`` keys are what was extracted)
        con.execute(
            f"UPDATE cooccur SET {end} = raw_{end} WHERE {end} <> raw_{end} "
            f"AND raw_{end} NOT IN (SELECT alias FROM amap)"
        )
        con.execute(
            f"UPDATE cooccur SET {end} = amap.entity FROM amap "
            f"WHERE cooccur.raw_{end} = amap.alias AND cooccur.{end} <> amap.entity"
        )
    return {k for pair in moved for k in pair if k}


SENTENCES = (
    "SELECT m.entity, d.collection, m.document_id, d.title, c.chunk_index, m.sent_start, "
    "substring(c.text, m.sent_start + 1, m.sent_end - m.sent_start) FROM mentions m "
    "JOIN chunks c ON c.id = m.chunk_id JOIN documents d ON d.id = m.document_id "
    "WHERE m.sent_start IS NOT NULL AND {where}"
)


def mention_sentences(store, keys: list[str] | None = None) -> dict[tuple[str, str], list[tuple]]:
    """(key, collection) → [(document, title, chunk index, start, sentence)] of the entities' mentions (of
    every entity when ``keys`` is None)."""
    sentences: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    if keys is None:
        rows = store.con.execute(SENTENCES.format(where="true")).fetchall()
    else:
        with store.registered("dkeys", {"k": keys}):
            rows = store.con.execute(SENTENCES.format(where="m.entity IN (SELECT k FROM dkeys)")).fetchall()
    for key, coll, doc, title, idx, start, text in rows:
        sentences[(key, coll)].append((doc, title, idx, start, text))
    return sentences


def describe(sentences: dict[tuple[str, str], list[tuple]]) -> dict[tuple[str, str], tuple[str, list[str]]]:
    """(key, collection) → (description, its documents): the first sentences that mention the entity,
    from the document named after it first, then in reading order (read when shown, never stored)."""
    titles: dict[str, str] = {}  # a common entity has thousands of sentences from a few hundred titles
    out = {}
    for (key, coll), found in sentences.items():
        found = sorted(
            found, key=lambda s: (titles.setdefault(s[1] or "", entity_key(s[1] or "")) != key, s[0], s[2], s[3])
        )
        chosen, docs = [], []
        for doc, _, _, _, text in found:
            text = " ".join((text or "").split())
            if text and text not in chosen:
                chosen.append(text)
                docs.append(doc)
            if len(chosen) == DESCRIPTION_SENTENCES:
                break
        out[(key, coll)] = ("\n".join(chosen)[:DESCRIPTION_CHARS], sorted(set(docs)))
    return out


def describe_entities(store, keys: list[str]) -> dict[tuple[str, str], tuple[str, list[str]]]:
    """The descriptions of these entities (``describe``), their sentences read from the store."""
    return describe(mention_sentences(store, keys)) if keys else {}


def with_descriptions(store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entity rows (key, collection, …) with ``description`` and ``source_documents`` added."""
    found = describe_entities(store, sorted({r["key"] for r in rows}))
    for r in rows:
        r["description"], r["source_documents"] = found.get((r["key"], r["collection"]), ("", []))
    return rows


def pair_rows(
    store, join: str = "", where: str = "true", params: list | None = None, extra: str = ""
) -> list[dict[str, Any]]:
    """Relations of the co-occurrences that ``join``/``where`` select (alias ``r`` is the ``cooc`` view), each
    with its summed weight and its strongest sentence as description, read from the chunk text. Filters
    apply before the aggregation, so a few pairs cost a few rows (the ``relations`` view ranks them all)."""
    return store.rows(
        f"WITH agg AS (SELECT {extra}r.a, r.b, r.collection, sum(r.weight) AS weight, "
        f"{strongest('r.')} AS best "
        f"FROM cooc r {join} WHERE {where} GROUP BY ALL) "
        "SELECT agg.* EXCLUDE (best), best.document_id AS source_document, "
        "coalesce(best.note, substring(c.text, best.sent_start + 1, best.sent_end - best.sent_start)) AS description "
        "FROM agg LEFT JOIN chunks c ON c.id = agg.best.chunk_id",
        params,
    )


def _communities(store, collections: set[str], touched: set[str] | None, detect: Detect) -> int:
    """Re-cluster the given collections; returns how many community reports were (re)computed."""
    con = store.con
    changed = 0
    for coll in sorted(collections):
        previous = store.rows(
            "SELECT c.id, c.level, list(m.entity ORDER BY m.entity) AS members FROM communities c "
            "JOIN community_members m ON m.community_id = c.id WHERE c.collection = ? "
            "GROUP BY c.id, c.level",
            [coll],
        )
        relations = store.rows("SELECT a, b, weight FROM relations WHERE collection = ?", [coll])
        initial = {e: i for i, p in enumerate(r for r in previous if r["level"] == 0) for e in p["members"]}
        found = detect(relations, initial=initial)
        keep_ids = {r["id"] for r in previous if touched is not None and not (set(r["members"]) & touched)}
        fresh = []
        for c in found:
            c.id = _community_id(coll, c.level, c.members)
            if c.parent_id is not None:
                c.parent_id = _community_id(coll, 0, c.parent_members)
            if c.id not in keep_ids:
                fresh.append(c)
        kept = keep_ids & {c.id for c in found}
        with store.registered("keep", {"id": sorted(kept)}):
            con.execute(
                "DELETE FROM community_members WHERE community_id IN (SELECT id FROM communities "
                "WHERE collection = ? AND id NOT IN (SELECT id FROM keep))",
                [coll],
            )
            con.execute("DELETE FROM communities WHERE collection = ? AND id NOT IN (SELECT id FROM keep)", [coll])
        store._insert(
            "communities",
            [
                {
                    "id": c.id,
                    "collection": coll,
                    "level": c.level,
                    "parent_id": c.parent_id,
                    "title": c.title,
                    "size": len(c.members),
                    "top_entities": c.top_entities,
                }
                for c in fresh
            ],
        )
        store._insert("community_members", [{"community_id": c.id, "entity": e} for c in fresh for e in c.members])
        moved = [(c.parent_id, c.id) for c in found if c.id in kept and c.level > 0]  # a kept child, a new parent
        if moved:
            con.executemany("UPDATE communities SET parent_id = ? WHERE id = ?", moved)
        changed += len(fresh)
    return changed


def _community_id(collection: str, level: int, members: list[str]) -> str:
    digest = hashlib.sha1("\x00".join([collection, str(level), *sorted(members)]).encode()).hexdigest()[:12]
    return f"c{level}-{digest}"
