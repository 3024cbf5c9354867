"""Small pure functions: fusion, syntax, filters, assembly, doc types, metrics, discovery."""

import math

import pytest

from ragkit.assemble import assemble
from ragkit.config import parse_filters
from ragkit.errors import BadQuery
from ragkit.evaluate import documents_of, mrr_at, ndcg_at, percentile, recall_at
from ragkit.ingest.discover import Undecodable, decode, discover
from ragkit.ingest.doctype import infer_doc_type
from ragkit.records import Hit
from ragkit.retrieve.filters import build_where
from ragkit.retrieve.fusion import convex, weighted_rrf, with_graph, with_retrievers
from ragkit.retrieve.query_syntax import parse_query
from ragkit.store.expr import Clause, readable


def hit(cid, score=0.0, doc="d", sec="s", idx=0, tokens=10, ext=""):
    return Hit(
        chunk_id=cid,
        document_id=doc,
        section_id=sec,
        chunk_index=idx,
        text=f"text {cid}",
        header="H",
        path="p",
        title="t",
        doc_type="x",
        collection="c",
        line_start=idx * 10 + 1,
        line_end=idx * 10 + 9,
        token_count=tokens,
        external_id=ext or doc,
        score=score,
    )


def test_weighted_rrf():
    dense = [hit("a"), hit("b"), hit("c")]
    lex = [hit("c"), hit("a")]
    fused = weighted_rrf({"dense": dense, "lexical": lex}, {"dense": 0.5, "lexical": 0.5}, k=60)
    score = {h.chunk_id: h.score for h in fused}
    assert score["a"] == pytest.approx(0.5 / 61 + 0.5 / 62)
    assert score["c"] == pytest.approx(0.5 / 63 + 0.5 / 61)
    assert [h.chunk_id for h in fused] == ["a", "c", "b"]
    assert fused[0].ranks == {"dense": 1, "lexical": 2}
    only_lex = weighted_rrf({"dense": dense, "lexical": lex}, {"dense": 0.0, "lexical": 1.0})
    assert only_lex[0].chunk_id == "c"


def test_a_query_fused_with_its_expansions_keeps_what_its_own_retrievers_said():
    """The reranker, the retry's check and the answer scorer read each hit's dense and BM25 scores and ranks: a
    query fused with its expansions (a doc type's templates, sub-queries) keeps them (issue 63: "how many hours of
    overtime are allowed per week?" abstained, its hits carrying only "original" and "expansion0")."""
    own = convex([hit("a", 0.9), hit("b", 0.5)], [hit("b", 7.0), hit("a", 3.0)], 0.5, [1.0, 0.0])
    expansion = [hit("c", 0.8), hit("a", 0.7)]
    fused = with_retrievers(weighted_rrf({"original": own, "expansion0": expansion}, {"expansion0": 0.5}), own)
    by_id = {h.chunk_id: h for h in fused}
    assert by_id["a"].scores["dense"] == 0.9 and by_id["a"].ranks == {"dense": 1, "lexical": 2, "original": 1,
                                                                     "expansion0": 2}  # fmt: skip
    assert by_id["b"].scores["lexical"] == 7.0 and "expansion0" not in by_id["b"].ranks
    assert "dense" not in by_id["c"].scores  # only the expansion found it


def test_query_syntax():
    q = parse_query('how "overtime pay" works -weekend -"night shift" well-known')
    assert q.must_include == ["overtime pay"]
    assert q.must_exclude == ["weekend", "night shift"]
    assert q.text == "how overtime pay works well-known"
    with pytest.raises(BadQuery):
        parse_query("-only -negatives")


def test_where_clause():
    q = parse_query('"a.b" x -y')
    prefilter = build_where(q, {"doc_type": "Policy", "owner": "hr"}, lambda f: ["d1", "d2"])
    where = prefilter.lance()
    assert "lower(doc_type) = 'policy'" in where
    assert "document_id IN ('d1', 'd2')" in where
    assert r"regexp_like(content, '(?i)\ba\.b\b')" in where
    assert r"NOT regexp_like(content, '(?i)\by\b')" in where
    assert [c.params for c in prefilter.clauses][0] == ("policy",)  # values travel apart from the SQL
    assert build_where(q, {"owner": "x"}, lambda f: []).never
    assert build_where(parse_query("plain"), {}, lambda f: []).lance() is None
    assert build_where(parse_query("plain"), {}, lambda f: [], readable_collections=()).never


def test_values_never_become_sql():
    hostile = ["team'a", "x); DROP TABLE documents; --", "a' OR '1'='1", "null\0byte", "ÅÄÖ?"]
    clause = readable(hostile)
    sql, params = clause.duck()
    assert sql == "lower(collection) IN (?, ?, ?, ?, ?)" and sorted(params) == sorted(h.lower() for h in hostile)
    lance = clause.lance()
    assert "'team''a'" in lance and "'a'' or ''1''=''1'" in lance and "\0" not in lance
    with pytest.raises(ValueError):
        Clause("a = ? AND b = ?", ("only one",))
    assert parse_filters(["a=b", "path=docs/*"]) == {"a": "b", "path": "docs/*"}
    with pytest.raises(BadQuery):
        parse_filters(["novalue"])
    assert parse_filters(["date_from=2024-01-31"]) == {"date_from": "2024-01-31"}
    for bad in ("date_from=notadate", "date_to=2024-13-45"):  # a clear error, not a silently ignored filter
        with pytest.raises(BadQuery, match="bad date"):
            parse_filters([bad])


def test_assembly_merges_adjacent_within_section_only():
    hits = [
        hit("a", 0.9, idx=3),
        hit("b", 0.5, idx=4),
        hit("c", 0.8, idx=6),
        hit("d", 0.7, sec="t", idx=5),
        hit("z", 0.1, doc="other"),
    ]
    ps = assemble(hits, k=3, budget=1000)
    by_anchor = {p.anchor_score: p for p in ps}
    assert by_anchor[0.9].chunk_ids == ["a", "b"]  # 3,4 adjacent, same section
    assert by_anchor[0.8].chunk_ids == ["c"]  # 6 is not adjacent to 4
    assert by_anchor[0.7].chunk_ids == ["d"]  # index 5 but another section
    assert [p.rank for p in ps] == [1, 2, 3]
    assert ps[0].line_start == 31 and ps[0].line_end == 49


def test_assembly_budget_and_anchor():
    hits = [
        hit("a", 0.2, idx=0, tokens=60),
        hit("b", 0.9, idx=1, tokens=60),
        hit("c", 0.5, idx=2, tokens=60),
        hit("z", 0.0, doc="other"),
    ]
    ps = assemble(hits, k=10, budget=130)
    assert ps[0].chunk_ids == ["b", "c"] and ps[0].anchor_score == 0.9  # grows to the better neighbour
    assert ps[1].chunk_ids == ["a"]
    assert all(p.token_count <= 130 for p in ps)
    assert len(assemble(hits, k=1, budget=130)) == 1


def test_doc_type_rules():
    assert infer_doc_type({"doc_type": "Contract"}, "x", "a", "b") == "contract"
    assert infer_doc_type({"type": "notes"}, None, "a", "b") == "notes"
    assert infer_doc_type({}, "policy", "a", "b") == "policy"
    assert infer_doc_type({}, None, "laws/a/arbzg/index.md", "Arbeitszeitgesetz") == "law"
    assert infer_doc_type({}, None, "x/api-reference.md", "API") == "technical"
    assert infer_doc_type({}, None, "x/y.md", "Holiday") == "unknown"


def test_metrics():
    rels = {"a": 1, "b": 2}
    assert ndcg_at(["b", "a"], rels) == pytest.approx(1.0)
    assert ndcg_at(["x", "a"], rels) < ndcg_at(["a", "x"], rels) < 1.0
    assert recall_at(["a", "x", "b"], rels, 2) == 0.5
    assert mrr_at(["x", "b"], rels) == 0.5 and mrr_at(["x"], rels) == 0.0
    assert percentile([1, 2, 3, 4], 0.5) == 2 and percentile([1, 2, 3, 4], 0.95) == 4
    hits = [hit("1", ext="A"), hit("2", ext="B"), hit("3", ext="A"), hit("4", ext="C")]
    assert documents_of(hits, 2) == ["A", "B"]


def test_one_ndcg_with_its_gain_named():
    """``ragkit eval`` weighs a grade by itself (trec_eval's ndcg_cut, so BEIR's); ``ragkit learn``'s guard by
    2^grade − 1. One function, the gain a parameter; with binary grades they agree, so SciFact's figures stand."""
    graded = {"a": 2, "b": 1}
    d = 1 / math.log2(3)  # the second rank's discount
    assert ndcg_at(["b", "a"], graded) == pytest.approx((1 + 2 * d) / (2 + 1 * d))
    assert ndcg_at(["b", "a"], graded, gain="exponential") == pytest.approx((1 + 3 * d) / (3 + 1 * d))
    assert ndcg_at(["a", "b"], graded, gain="exponential") == pytest.approx(1.0)
    binary = {"a": 1, "c": 1}
    for ranked in (["a", "b", "c"], ["x", "c"], ["c", "a"], []):
        assert ndcg_at(ranked, binary) == pytest.approx(ndcg_at(ranked, binary, gain="exponential"))
    assert ndcg_at([2, 0, 1], {0: 4, 1: 1, 2: 0}, k=2, gain="exponential") == pytest.approx(d * 15 / (15 + d))
    assert ndcg_at(["x"], {}) == 0.0


def test_decode_and_discover(tmp_path):
    assert decode("é\r\nx".encode()) == "é\nx"
    assert decode("é".encode("cp1252")) == "é"
    with pytest.raises(Undecodable):
        decode(b"ab\x00cd")
    (tmp_path / "a.md").write_text("x")
    (tmp_path / "b.bin").write_text("x")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "c.md").write_text("x")
    rels = [f.rel.split("/", 1)[1] for f in discover([tmp_path], ["*.md"], [])]
    assert rels == ["a.md"]
    assert len(discover([tmp_path], ["*.md"], [], include_hidden=True)) == 2


def test_config_file_and_index_dir(tmp_path):
    from pathlib import Path

    from ragkit.config import load_config, override, resolve_index_dir
    from ragkit.errors import RagkitError

    (tmp_path / "ragkit.toml").write_text("[index]\nchunk_tokens = 128\n[query]\nalpha = 0.3\nk = 4\n")
    icfg, qcfg = load_config(tmp_path)
    assert icfg.chunk_tokens == 128 and qcfg.alpha == 0.3 and qcfg.k == 4
    assert override(qcfg, k=None, alpha=0.9).alpha == 0.9 and override(qcfg, k=None).k == 4
    (tmp_path / "ragkit.toml").write_text("[query]\nalfa = 1\n")
    with pytest.raises(RagkitError, match="unknown setting"):
        load_config(tmp_path)
    assert resolve_index_dir(None) == Path("indexes/default")
    assert resolve_index_dir("notes") == Path("indexes/notes")
    assert resolve_index_dir("./x") == Path.cwd() / "x" and resolve_index_dir("/a/b") == Path("/a/b")  # ./ is a folder


def test_assembly_skips_irrelevant_neighbours_and_scores_coherence():
    import numpy as np

    a, b, c = hit("a", 1.0, idx=0), hit("b", 0.05, idx=1), hit("c", 0.0, doc="o")
    ps = assemble([a, b, c], k=10, budget=1000)
    assert [p.chunk_ids for p in ps][0] == ["a"]  # b is adjacent but not relevant enough
    x, y = hit("x", 1.0, idx=0), hit("y", 0.9, idx=1)
    x.vector, y.vector = np.array([1.0, 0.0]), np.array([0.6, 0.8])
    p = assemble([x, y, c], k=1, budget=1000)[0]
    assert p.chunk_ids == ["x", "y"] and p.coherence_score == 0.6


def test_context_packing():
    from ragkit.assemble import pack_context
    from ragkit.records import Passage

    def passage(rank, doc, line, tokens, section="Law (L) > Part 1 > § 3 Work"):
        return Passage(
            rank=rank,
            score=1.0 / rank,
            anchor_score=1.0,
            document_id=doc,
            path=f"{doc}.md",
            title=doc,
            section=section,
            line_start=line,
            line_end=line + 5,
            text=f"text {rank}",
            chunk_ids=[str(rank)],
            token_count=tokens,
        )

    ps = [passage(1, "A", 50, 100), passage(2, "B", 10, 100), passage(3, "A", 5, 100), passage(4, "C", 1, 500)]
    pack = pack_context(ps, budget=400)
    assert pack.included == [3, 1, 2]  # document A first (best rank), in document order; then B
    assert pack.dropped == [4] and pack.tokens <= 400
    assert pack.text.startswith("--- Source: Law (L) > § 3 Work ---\ntext 3")
    assert pack.text.index("text 1") < pack.text.index("text 2")


def test_convex_fusion_normalises_each_list_and_weights_them_by_alpha():
    import numpy as np

    q = np.array([1.0, 0.0])
    dense = [hit("a", 0.9), hit("b", 0.7), hit("c", 0.5)]
    lexical = [hit("c", 12.0), hit("d", 8.0), hit("a", 4.0)]
    lexical[1].vector = np.array([0.6, 0.8])  # d: BM25 only; its own vector gives cosine 0.6
    fused = {h.chunk_id: h for h in convex(dense, lexical, 0.5, q)}
    assert fused["a"].score == pytest.approx(0.5 * 1.0 + 0.5 * 0.0)  # top dense, bottom BM25
    assert fused["c"].score == pytest.approx(0.5 * 0.0 + 0.5 * 1.0)
    assert fused["b"].score == pytest.approx(0.5 * 0.5)  # halfway in dense, absent from BM25
    assert fused["d"].score == pytest.approx(0.5 * 0.25 + 0.5 * 0.5)  # cosine 0.6 between 0.5 and 0.9
    assert fused["a"].ranks == {"dense": 1, "lexical": 3} and fused["a"].scores == {"dense": 0.9, "lexical": 4.0}
    assert [h.chunk_id for h in convex(dense, lexical, 1.0, q)][:2] == ["a", "b"]  # alpha 1: dense order
    assert [h.chunk_id for h in convex(dense, lexical, 0.0, q)][:2] == ["c", "d"]  # alpha 0: BM25 order
    assert convex([], [], 0.5, q) == [] and [h.chunk_id for h in convex([], lexical[:1], 0.5, q)] == ["c"]
    assert dense[0].score == 0.9 and not dense[0].ranks  # the inputs are not changed


def test_graph_scores_are_added_to_the_text_fusion_scaled_by_their_highest():
    text = [hit("a", 0.8), hit("b", 0.6)]
    graph = [hit("b", 0.02), hit("g", 0.01)]  # g: found by the walk only
    fused = {h.chunk_id: h for h in with_graph(text, graph, "ppr", 0.25)}
    assert fused["a"].score == pytest.approx(0.75 * 0.8)
    assert fused["b"].score == pytest.approx(0.75 * 0.6 + 0.25 * 1.0)
    assert fused["g"].score == pytest.approx(0.25 * 0.5)  # the last of a short list still counts
    assert fused["g"].ranks == {"ppr": 2} and [h.chunk_id for h in with_graph(text, [], "ppr", 0.25)] == ["a", "b"]


def test_an_encoder_that_remembers_encodes_each_text_once_and_forgets_the_oldest():
    import numpy as np

    from ragkit.embed.remembered import Remembered

    calls = []

    def encode(texts):
        calls.append(list(texts))
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)

    enc = Remembered(encode, size=3)
    first = enc(["a", "bb", "a"])
    assert calls == [["a", "bb"]] and first.tolist() == [[1, 1], [2, 1], [1, 1]]
    again = enc(["bb", "ccc"])  # "bb" kept: only "ccc" is encoded
    assert calls[-1] == ["ccc"] and again.tolist() == [[2, 1], [3, 1]]
    enc(["dddd"])  # four texts met, three kept: "a" (the least recently asked) goes
    enc(["a"])
    assert calls[-1] == ["a"] and enc.encoded == 5
    assert enc([]).shape[0] == 0


def test_encode_query_is_written_once_by_the_embedder_base():
    """``Embedder.encode_query``: ``encode_queries`` of the one question, which is ``encode`` where a model has
    no query prompt; no encoder writes its own."""
    import numpy as np

    from ragkit.embed import (
        Embedder,
        GgufEmbedder,
        HttpEmbedder,
        OnnxEmbedder,
        SentenceTransformerEmbedder,
        StaticEmbedder,
    )
    from ragkit.embed.tuned import TunedQueries

    class Lengths(Embedder):
        def encode(self, texts, progress=None):
            return np.array([[float(len(t)), 1.0] for t in texts])

    class Prompted(Lengths):
        def encode_queries(self, texts):
            return self.encode(["query: " + t for t in texts])

    assert Lengths().encode_query("abc").tolist() == [3.0, 1.0]
    assert Prompted().encode_query("abc").tolist() == [10.0, 1.0]
    for cls in (GgufEmbedder, HttpEmbedder, OnnxEmbedder, SentenceTransformerEmbedder, StaticEmbedder, TunedQueries):
        assert issubclass(cls, Embedder) and "encode_query" not in vars(cls), cls
