"""Canonical entities, relations and communities, derived inside the commit transaction.

The extraction rows (``mentions``, ``cooccur``, ``aliases``, per chunk and
document) are the source of truth; from them this module keeps

- ``entities``: one row per entity key and collection, with its display name,
  type, aliases (surfaces and alias keys), mention/chunk/document counts, a
  description built from the sentences that mention it, the documents those
  sentences come from, and a vector;
- ``relations``: one row per entity pair and collection, with summed weight,
  the strongest connecting sentence as description, its document, the chunks
  where the pair co-occurs, and a vector;
- ``communities`` / ``community_members``: Leiden communities per collection.

Descriptions, relations and reports are built per collection, so a query
scoped to one collection never sees text from another; for other filters each
row names the documents its text comes from and readers drop rows built from
excluded documents.

Vectors, chosen for cost (measured on hotpotqa-100: encoding runs at ~600
names/s but ~110 sentences/s on two cores, and the whole plain index takes
~32 s for 9,060 entities, 3,703 distinct relation sentences): an entity's
vector is the mean of the vectors of the chunks that mention it (its
description's context, already computed) plus, for an entity found in two or
more chunks, the embedding of its name; a relation's vector is the mean of its
two entities' vectors and its source chunk's vector; a community's is the mean
of its members' vectors. Only names are encoded.

Only entities touched by the run's changed or removed documents (and pairs
that involve them) are recomputed. Communities are re-clustered per touched collection, starting from
the previous partition; a community whose members are unchanged and untouched
keeps its report and vector.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Any, Callable

import numpy as np

DESCRIPTION_SENTENCES = 2
DESCRIPTION_CHARS = 400

SCHEMA = """
CREATE TABLE IF NOT EXISTS mentions (
    chunk_id VARCHAR, document_id VARCHAR, entity VARCHAR, raw VARCHAR, surface VARCHAR, type VARCHAR,
    sent_start INTEGER, sent_end INTEGER
);
CREATE TABLE IF NOT EXISTS cooccur (
    chunk_id VARCHAR, document_id VARCHAR, a VARCHAR, b VARCHAR, weight DOUBLE, description VARCHAR
);
CREATE TABLE IF NOT EXISTS aliases (document_id VARCHAR, alias VARCHAR, entity VARCHAR);
CREATE TABLE IF NOT EXISTS entities (
    key VARCHAR, collection VARCHAR, name VARCHAR, type VARCHAR, aliases VARCHAR[], mentions INTEGER,
    chunks INTEGER, documents INTEGER, description VARCHAR, source_documents VARCHAR[], chunk_ids VARCHAR[],
    vector FLOAT[]
);
CREATE TABLE IF NOT EXISTS relations (
    a VARCHAR, b VARCHAR, collection VARCHAR, weight DOUBLE, chunks INTEGER, description VARCHAR,
    source_document VARCHAR, source_chunk VARCHAR, chunk_ids VARCHAR[], vector FLOAT[]
);
CREATE TABLE IF NOT EXISTS communities (
    id VARCHAR PRIMARY KEY, collection VARCHAR, level INTEGER, parent_id VARCHAR, title VARCHAR, report VARCHAR,
    size INTEGER, top_entities VARCHAR[], source_documents VARCHAR[], vector FLOAT[]
);
CREATE TABLE IF NOT EXISTS community_members (community_id VARCHAR, entity VARCHAR);
"""

# alias key → the entity most documents declare it for
ALIAS_MAP = ("SELECT alias, arg_max(entity, n) AS entity FROM (SELECT alias, entity, count(DISTINCT document_id) AS n "
             "FROM aliases WHERE alias <> entity GROUP BY alias, entity) GROUP BY alias")

# the canonical view of co-occurrences: alias keys mapped to their entity, pairs ordered, per collection
_COOC = """
CREATE OR REPLACE TEMP VIEW cooc AS
SELECT c.chunk_id, c.document_id, d.collection,
       least(coalesce(x.entity, c.a), coalesce(y.entity, c.b)) AS a,
       greatest(coalesce(x.entity, c.a), coalesce(y.entity, c.b)) AS b, c.weight, c.description
FROM cooccur c JOIN documents d ON d.id = c.document_id
LEFT JOIN amap x ON x.alias = c.a LEFT JOIN amap y ON y.alias = c.b
WHERE coalesce(x.entity, c.a) <> coalesce(y.entity, c.b)
"""

Embed = Callable[[list[str]], np.ndarray]
ChunkVectors = Callable[[list[str]], dict[str, np.ndarray]]


def touched_by_documents(store, doc_ids: list[str]) -> set[str]:
    """Entity keys mentioned by these documents (call before deleting them)."""
    if not doc_ids:
        return set()
    with store.registered("touch_docs", {"id": doc_ids}):
        return {r[0] for r in store.con.execute(
            "SELECT DISTINCT entity FROM mentions WHERE document_id IN (SELECT id FROM touch_docs)").fetchall()}


def refresh(store, touched: set[str] | None, collections: set[str] | None, embed: Embed | None,
            chunk_vectors: ChunkVectors | None = None,
            summarize: Callable[[str], str] | None = None) -> dict[str, int]:
    """Recompute what ``touched`` entity keys affect (``None``: everything); returns counts of recomputed rows.

    ``collections``: collections whose documents changed (``None``: all) — their communities are re-clustered.
    ``chunk_vectors``: chunk id → vector lookup (entity and relation vectors need them).
    ``summarize``: extractive report → written summary (LLM), put above the report of each new community.
    """
    con = store.con
    remapped = _remap_aliases(store)
    con.execute(_COOC)
    if touched is not None:
        touched = touched | remapped | {r[0] for r in con.execute(
            "SELECT DISTINCT m.entity FROM mentions m WHERE m.entity NOT IN (SELECT key FROM entities)").fetchall()}
    with store.registered("touched", {"k": sorted(touched or [])}):
        if touched is None:
            con.execute("DELETE FROM entities")
            con.execute("DELETE FROM relations")
        else:
            con.execute("DELETE FROM entities WHERE key IN (SELECT k FROM touched)")
            con.execute("DELETE FROM relations WHERE a IN (SELECT k FROM touched) OR b IN (SELECT k FROM touched)")
        entities = _entity_rows(store, "" if touched is None else "AND m.entity IN (SELECT k FROM touched)")
        relations = store.rows(
            "SELECT a, b, collection, sum(weight) AS weight, count(DISTINCT chunk_id) AS chunks, "
            "arg_max(struct_pack(d := description, doc := document_id, c := chunk_id), weight) AS best, "
            "list(DISTINCT chunk_id ORDER BY chunk_id) AS chunk_ids FROM cooc "
            + ("" if touched is None else "WHERE a IN (SELECT k FROM touched) OR b IN (SELECT k FROM touched) ")
            + "GROUP BY a, b, collection")
    for r in relations:
        best = r.pop("best")
        r["description"], r["source_document"], r["source_chunk"] = best["d"] or "", best["doc"], best["c"]
    embedded = 0
    if embed is not None and chunk_vectors is not None:
        embedded = _entity_vectors(entities, embed, chunk_vectors)
        _relation_vectors(store, relations, entities, chunk_vectors)
    store._insert("entities", entities)
    store._insert("relations", relations)
    if collections is None or touched is None:
        collections = {r[0] for r in con.execute("SELECT DISTINCT collection FROM documents").fetchall()}
    changed = _communities(store, collections, touched, summarize)
    return {"entities": len(entities), "relations": len(relations), "communities": changed,
            "names_embedded": embedded}


def _unit_rows(m: np.ndarray) -> np.ndarray:
    return (m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def _entity_vectors(entities: list[dict[str, Any]], embed: Embed, chunk_vectors: ChunkVectors) -> int:
    """Mean chunk vector (+ name embedding for entities in ≥ 2 chunks) per entity; returns names embedded."""
    cvec = chunk_vectors(sorted({c for e in entities for c in e["chunk_ids"]}))
    names = sorted({e["name"] for e in entities if e["chunks"] >= 2})
    nvec = dict(zip(names, embed(names))) if names else {}
    if not entities or not cvec:
        return len(names)
    dim = len(next(iter(cvec.values())))
    mat = np.zeros((len(entities), dim), dtype=np.float32)
    for i, e in enumerate(entities):
        ctx = [cvec[c] for c in e["chunk_ids"] if c in cvec]
        if ctx:
            mat[i] = np.mean(ctx, axis=0)
        if e["name"] in nvec:
            mat[i] += nvec[e["name"]]
    mat = _unit_rows(mat)
    for e, v in zip(entities, mat):
        e["vector"] = v if v.any() else None
    return len(names)


def _relation_vectors(store, relations: list[dict[str, Any]], entities: list[dict[str, Any]],
                      chunk_vectors: ChunkVectors) -> None:
    """Mean of the two entity vectors and the source chunk's vector."""
    evec = {(e["key"], e["collection"]): e["vector"] for e in entities if e["vector"] is not None}
    missing = sorted({k for r in relations for k in (r["a"], r["b"])} - {k for k, _ in evec})
    if missing:
        with store.registered("evkeys", {"k": missing}):
            keys, colls, mat = vector_matrix(store, "SELECT key, collection, vector FROM entities "
                                                    "WHERE key IN (SELECT k FROM evkeys) AND vector IS NOT NULL")
        evec.update(((k, c), v) for k, c, v in zip(keys, colls, mat))
    cvec = chunk_vectors(sorted({r["source_chunk"] for r in relations}))
    if not relations or not (evec or cvec):
        return
    dim = len(next(iter(evec.values()))) if evec else len(next(iter(cvec.values())))
    zero = np.zeros(dim, dtype=np.float32)
    coll = [r["collection"] for r in relations]
    mat = (np.stack([evec.get((r["a"], c), zero) for r, c in zip(relations, coll)])
           + np.stack([evec.get((r["b"], c), zero) for r, c in zip(relations, coll)])
           + np.stack([cvec.get(r["source_chunk"], zero) for r in relations]))
    mat = _unit_rows(mat)
    for r, v in zip(relations, mat):
        r["vector"] = v if v.any() else None


def vector_matrix(store, sql: str, params: list | None = None) -> tuple[list, list, np.ndarray]:
    """(first column, second column, vectors) of a query whose third column is a vector, without Python floats."""
    t = store.con.sql(sql, params=params or None).to_arrow_table()
    if not t.num_rows:
        return [], [], np.zeros((0, 0), dtype=np.float32)
    vec = t.column(2).combine_chunks()
    mat = vec.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(t.num_rows, -1)
    return t.column(0).to_pylist(), t.column(1).to_pylist(), mat


def _remap_aliases(store) -> set[str]:
    """Map mentions of alias keys ("who") to their entity ("world health organization").

    An alias declared by several documents maps to the entity most documents
    give it. Returns the keys whose mentions moved (both sides).
    """
    con = store.con
    con.execute("CREATE OR REPLACE TEMP TABLE amap AS " + ALIAS_MAP)
    moved = con.execute(
        "SELECT DISTINCT m.entity, coalesce(am.entity, m.raw) FROM mentions m LEFT JOIN amap am ON am.alias = m.raw "
        "WHERE m.entity IS DISTINCT FROM coalesce(am.entity, m.raw)").fetchall()
    if moved:
        con.execute("UPDATE mentions SET entity = raw WHERE entity <> raw AND raw NOT IN (SELECT alias FROM amap)")
        con.execute("UPDATE mentions SET entity = amap.entity FROM amap "
                    "WHERE mentions.raw = amap.alias AND mentions.entity <> amap.entity")
    return {k for pair in moved for k in pair if k}


def _entity_rows(store, only: str) -> list[dict[str, Any]]:
    rows = store.rows(
        "SELECT m.entity AS key, d.collection, mode(m.surface) AS name, "
        "coalesce(mode(m.type) FILTER (WHERE m.type NOT IN ('acronym', 'name', 'term', 'title')), mode(m.type)) AS type, "
        "list(DISTINCT m.surface ORDER BY m.surface) AS aliases, count(*) AS mentions, "
        "count(DISTINCT m.chunk_id) AS chunks, count(DISTINCT m.document_id) AS documents, "
        "list(DISTINCT m.chunk_id ORDER BY m.chunk_id) AS chunk_ids "
        f"FROM mentions m JOIN documents d ON d.id = m.document_id WHERE true {only} GROUP BY m.entity, d.collection")
    alias_keys: dict[str, list[str]] = defaultdict(list)
    for alias, entity in store.con.execute("SELECT alias, entity FROM amap ORDER BY alias").fetchall():
        alias_keys[entity].append(alias)
    sentences: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for key, coll, doc, title, idx, start, text in store.con.execute(
        "SELECT m.entity, d.collection, m.document_id, d.title, c.chunk_index, m.sent_start, "
        "substring(c.text, m.sent_start + 1, m.sent_end - m.sent_start) FROM mentions m "
        "JOIN chunks c ON c.id = m.chunk_id JOIN documents d ON d.id = m.document_id "
        f"WHERE m.sent_start IS NOT NULL {only}").fetchall():
        sentences[(key, coll)].append((doc, title, idx, start, text))
    from ragkit.extract.entities import normalize

    for r in rows:
        r["aliases"] = sorted(set(r["aliases"]) | set(alias_keys.get(r["key"], [])))
        # the document named after the entity describes it best; then reading order
        found = sorted(sentences.get((r["key"], r["collection"]), []),
                       key=lambda s: (normalize(s[1] or "") != r["key"], s[0], s[2], s[3]))
        chosen, docs = [], []
        for doc, _, _, _, text in found:
            text = " ".join((text or "").split())
            if text and text not in chosen:
                chosen.append(text)
                docs.append(doc)
            if len(chosen) == DESCRIPTION_SENTENCES:
                break
        r["description"] = "\n".join(chosen)[:DESCRIPTION_CHARS]
        r["source_documents"] = sorted(set(docs))
    return rows


def _communities(store, collections: set[str], touched: set[str] | None,
                 summarize: Callable[[str], str] | None = None) -> int:
    """Re-cluster the given collections; returns how many community reports were (re)computed."""
    from ragkit.extract.communities import detect

    con = store.con
    changed = 0
    for coll in sorted(collections):
        previous = store.rows("SELECT c.id, c.level, list(m.entity ORDER BY m.entity) AS members FROM communities c "
                              "JOIN community_members m ON m.community_id = c.id WHERE c.collection = ? "
                              "GROUP BY c.id, c.level", [coll])
        relations = store.rows("SELECT a, b, weight, description, source_document FROM relations "
                               "WHERE collection = ?", [coll])
        initial = {e: i for i, p in enumerate(r for r in previous if r["level"] == 0) for e in p["members"]}
        found = detect(relations, initial=initial)
        keep_ids = {r["id"] for r in previous
                    if touched is not None and not (set(r["members"]) & touched)}
        fresh = []
        for c in found:
            c.id = _community_id(coll, c.level, c.members)
            if c.parent_id is not None:
                c.parent_id = _community_id(coll, 0, c.parent_members)
            if c.id not in keep_ids:
                fresh.append(c)
        kept = keep_ids & {c.id for c in found}
        with store.registered("keep", {"id": sorted(kept)}):
            con.execute("DELETE FROM community_members WHERE community_id IN (SELECT id FROM communities "
                        "WHERE collection = ? AND id NOT IN (SELECT id FROM keep))", [coll])
            con.execute("DELETE FROM communities WHERE collection = ? AND id NOT IN (SELECT id FROM keep)", [coll])
        for c in fresh if summarize else ():
            written = summarize(c.report)
            if written:
                c.report = f"{written}\n\n{c.report}"
        # a community's vector is the mean of its members' entity vectors (no encoding needed)
        keys, _, mat = vector_matrix(store, "SELECT key, collection, vector FROM entities WHERE collection = ? "
                                            "AND vector IS NOT NULL", [coll])
        row_of = {k: i for i, k in enumerate(keys)}
        store._insert("communities", [
            {"id": c.id, "collection": coll, "level": c.level, "parent_id": c.parent_id, "title": c.title,
             "report": c.report, "size": len(c.members), "top_entities": c.top_entities,
             "source_documents": sorted(c.source_documents), "vector": _mean_of(mat, [row_of.get(e) for e in c.members])}
            for c in fresh])
        store._insert("community_members", [{"community_id": c.id, "entity": e} for c in fresh for e in c.members])
        changed += len(fresh)
    return changed


def _mean_of(mat: np.ndarray, rows: list[int | None]) -> np.ndarray | None:
    rows = [r for r in rows if r is not None]
    return _unit_rows(mat[rows].mean(axis=0, keepdims=True))[0] if rows else None


def _community_id(collection: str, level: int, members: list[str]) -> str:
    digest = hashlib.sha1("\x00".join([collection, str(level), *sorted(members)]).encode()).hexdigest()[:12]
    return f"c{level}-{digest}"
