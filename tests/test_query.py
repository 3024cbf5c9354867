"""Query path with the fake embedder: strategies, syntax, filters, JSON schema."""

import pytest

from ragkit.config import QueryConfig
from ragkit.errors import BadQuery
from ragkit.render import SCHEMA, result_dict


@pytest.fixture
def ix(corpus, index_with):
    return index_with(corpus)[1]


@pytest.fixture
def reader(ix):
    return ix.reader


def top(ix, q, **kw):
    return ix.query(q, QueryConfig(**kw)).passages


@pytest.mark.parametrize("strategy", ["naive", "lexical", "hybrid"])
def test_each_strategy_finds_the_section(ix, strategy):
    ps = top(ix, "rollback previous container image", strategy=strategy, k=3)
    assert ps[0].section == "Deployment > Rollbacks"
    assert ps[0].path == "docs/tech/deploy.rst"
    assert [p.rank for p in ps] == list(range(1, len(ps) + 1))


def test_hybrid_records_both_ranks(ix):
    r = ix.query("overtime limited", QueryConfig(k=3))
    assert set(r.hits[0].ranks) == {"dense", "lexical"}
    assert r.plan.fusion["method"] == "convex" and r.plan.fusion["alpha"] == QueryConfig().alpha
    r = ix.query("overtime limited", QueryConfig(k=3, fusion="rrf"))
    assert r.plan.fusion["method"] == "weighted_rrf" and r.plan.fusion["k"] == 60
    assert {"plan", "embed_query", "dense", "lexical", "fusion", "assemble", "total"} <= set(r.timings_ms)


def test_phrase_must_appear_and_minus_must_not(ix):
    ps = top(ix, '"hourly rate" overtime', strategy="hybrid")
    assert ps and all("hourly rate" in p.text for p in ps)
    ps = top(ix, "overtime -limited", strategy="hybrid")
    assert ps and all("limited" not in p.text.lower() for p in ps)


def test_filters(ix):
    assert {p.path for p in top(ix, "overtime meeting rollback", filters={"doc_type": "policy"})} == {
        "docs/policies/overtime.md"
    }
    assert {p.path for p in top(ix, "overtime meeting rollback", filters={"path": "*/tech/*"})} == {
        "docs/tech/deploy.rst"
    }
    assert {p.path for p in top(ix, "overtime meeting rollback", filters={"owner": "hr"})} == {
        "docs/policies/overtime.md"
    }
    assert {p.path for p in top(ix, "overtime meeting", filters={"tags": "pay"})} == {"docs/policies/overtime.md"}
    assert top(ix, "overtime", filters={"owner": "nobody"}) == []


def test_bad_queries(ix):
    with pytest.raises(BadQuery):
        top(ix, "   ")
    with pytest.raises(BadQuery):
        top(ix, "x", strategy="nope")
    with pytest.raises(BadQuery):
        top(ix, "x", alpha=2.0)


def test_json_schema(ix):
    d = result_dict(ix.query("overtime", QueryConfig(k=2)))
    assert d["schema"] == SCHEMA == "ragkit.query/1"
    assert set(d) >= {"query", "strategy", "plan", "passages", "timings_ms"}
    p = d["passages"][0]
    assert set(p) >= {"rank", "score", "document", "section", "lines", "text", "chunk_ids"}
    assert set(p["document"]) == {"id", "path", "title", "doc_type", "collection"}
    assert p["lines"][0] <= p["lines"][1]


def _lancedb_table(reader):
    import lancedb

    run = reader.manifest.last_run
    table = lancedb.connect(str(reader.index_dir / "lance")).open_table(run.lance_table)
    table.checkout(run.lance_version)
    return table


@pytest.mark.parametrize("where", [None, "doc_type = 'policy'", "NOT regexp_like(content, '(?i)\\bovertime\\b')"])
def test_in_memory_dense_search_equals_lancedbs(reader, where):
    """The exact in-memory search (one matrix) and LanceDB's own flat search rank the same chunks, at the
    same distances, with and without a prefilter."""
    vec = reader.embedder.encode_query("how is overtime compensated")
    assert reader.chunks.exact
    ours = reader.chunks.vector_search(vec, 5, where)
    q = _lancedb_table(reader).search(vec, vector_column_name="vector").metric("cosine").limit(5)
    theirs = (q.where(where, prefilter=True) if where else q).to_list()
    assert [r["id"] for r in ours] == [r["id"] for r in theirs] and ours
    assert [round(r["_distance"], 5) for r in ours] == [round(r["_distance"], 5) for r in theirs]
    assert all(r["text"] and r["vector"] is not None for r in ours)


def test_full_text_search_equals_lancedbs(reader):
    """pylance reads the BM25 index LanceDB wrote: same chunks, same scores."""
    ours = reader.chunks.fts_search("overtime hours", 5, None)
    theirs = _lancedb_table(reader).search("overtime hours", query_type="fts", fts_columns="content").limit(5).to_list()
    assert [r["id"] for r in ours] == [r["id"] for r in theirs] and ours
    assert [round(r["_score"], 4) for r in ours] == [round(r["_score"], 4) for r in theirs]


@pytest.fixture
def on_disk(corpus, index_with):
    """The corpus indexed with a vector index (``vector_index_min_rows=1``): its table is read from disk."""
    from ragkit.config import IndexConfig

    return index_with(corpus, cfg=IndexConfig(vector_index_min_rows=1), name="ann")[1]


def test_ann_path_agrees_with_the_exact_one(reader, on_disk):
    """A table with a vector index is read from disk (``LanceChunks``, the form chosen when the run is opened):
    Lance's vector index answers dense search, rows come by id in the order asked, and on this small index the
    results agree with the exact search in memory (``MemoryChunks``)."""
    vec = reader.embedder.encode_query("rest periods between shifts")
    exact = [r["id"] for r in reader.chunks.vector_search(vec, 4, None)]
    chunks = on_disk.reader.chunks
    assert reader.chunks.exact and not chunks.exact
    assert [r["id"] for r in chunks.vector_search(vec, 4, None)] == exact
    assert [r["id"] for r in chunks.by_ids(exact[::-1])] == exact[::-1]
    assert chunks.titles() == reader.chunks.titles()


@pytest.mark.parametrize("where", [{}, {"doc_type": "policy"}])
def test_large_table_fuses_ids_then_reads_the_kept_rows(on_disk, monkeypatch, where):
    """A table read from disk: hybrid fuses ids and scores (``SearchContext.text_rankings``) and reads only
    the rows it keeps: the same passages, scores and fields as the rows read with every hit."""
    from ragkit.retrieve.context import SearchContext

    cfg = QueryConfig(strategy="hybrid", k=4, retry=False, filters=where)
    lean = on_disk.query("how is overtime compensated", cfg)
    monkeypatch.setattr(SearchContext, "text_rankings", lambda self, n: (self.dense(n), self.lexical(n)))
    full = on_disk.query("how is overtime compensated", cfg)
    assert lean.passages and [p.text for p in lean.passages] == [p.text for p in full.passages]
    assert [round(p.score, 6) for p in lean.passages] == [round(p.score, 6) for p in full.passages]
    assert [(h.path, h.line_start, h.section_id, h.ranks) for h in lean.hits] == [
        (h.path, h.line_start, h.section_id, h.ranks) for h in full.hits
    ]
    assert "rows" in lean.timings_ms and "rows" not in full.timings_ms


def test_a_table_with_a_vector_index_gets_scalar_indexes(index_with, corpus):
    """From ``vector_index_min_rows`` a run builds the vector index and BTREE indexes on the columns queries
    filter by (``SCALAR_INDEXED``); hybrid then reads only the rows it keeps."""
    from ragkit.config import IndexConfig
    from ragkit.store.lance import SCALAR_INDEXED

    _, ix = index_with(corpus, cfg=IndexConfig(vector_index_min_rows=1))
    reader = ix.reader
    indexed = {tuple(i.field_names): i.index_type for i in reader.chunks.ds.describe_indices()}
    assert not reader.chunks.exact and all(indexed.get((c,)) == "BTree" for c in SCALAR_INDEXED), indexed
    r = ix.query("how is overtime compensated", QueryConfig(strategy="hybrid", k=3, retry=False))
    assert r.passages and all(h.text and h.section_id for h in r.hits) and "rows" in r.timings_ms
    assert reader.titles() == reader.chunks.titles() and len(reader.titles()) > 1  # from the store, alike
