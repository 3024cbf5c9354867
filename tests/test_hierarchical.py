"""RAPTOR-lite summary tree (build, incremental upkeep), hierarchical search, vocabulary expansion."""

from dataclasses import dataclass, field

import numpy as np
import pytest

import ragkit
from ragkit.config import IndexConfig, QueryConfig
from ragkit.embed import PROBES
from ragkit.errors import BadQuery
from ragkit.extract.summaries import centroid_sentences
from ragkit.records import Hit
from ragkit.retrieve import expansion
from ragkit.retrieve.strategies.hierarchical import expand
from tests.conftest import write
from tests.fakes import FakeEmbedder, FakeGenerator

CFG = IndexConfig(chunk_tokens=40, chunk_min_tokens=5)

GUIDE = """
# Field Guide

The guide describes animals of the savanna and how rangers count them each season.

## Zebras

Zebras live in large herds and graze on the open grassland of the savanna all year, moving with the rains.

Zebra stripes confuse biting flies and lions alike, and every single zebra has a stripe pattern of its own.

## Birds

Birds of the savanna nest in acacia trees and follow the herds for insects.

### Ostriches

Ostriches are the largest living birds and can run at seventy kilometres an hour when a predator chases them.

Ostrich eggs weigh more than a kilogram each and are guarded by both parents in turn through day and night.
"""


def _tree(ix):
    with ix.reader.duck() as store:
        return store.rows(
            "SELECT id, level, document_id, section_id, parent_id, title, text, chunk_ids, method "
            "FROM summaries ORDER BY id"
        )


@pytest.fixture
def guide(tmp_path):
    root = tmp_path / "g"
    write(root, "guide.md", GUIDE)
    write(root, "note.txt", "A one-line note about the ranger schedule.\n")
    return root


def test_tree_has_a_node_wherever_it_covers_several_chunks(guide, index_with):
    summary, ix = index_with(guide, cfg=CFG)
    nodes = _tree(ix)
    with ix.reader.duck() as store:
        chunks = store.rows(
            "SELECT c.id, c.document_id, s.breadcrumb FROM chunks c JOIN sections s "
            "ON s.id = c.section_id ORDER BY c.chunk_index"
        )
    guide_chunks = [c["id"] for c in chunks if c["breadcrumb"].startswith("Field Guide")]
    assert len(guide_chunks) == 6
    by_title = {n["title"]: n for n in nodes}
    # one document node over all chunks; the root section covers the same chunks and is not repeated
    assert by_title["Field Guide"]["level"] == 2 and by_title["Field Guide"]["chunk_ids"] == guide_chunks
    assert sorted(n["title"] for n in nodes if n["level"] == 1) == [
        "Field Guide > Birds",
        "Field Guide > Birds > Ostriches",
        "Field Guide > Zebras",
    ]
    birds, ostriches = by_title["Field Guide > Birds"], by_title["Field Guide > Birds > Ostriches"]
    assert ostriches["parent_id"] == birds["id"] and birds["parent_id"] == by_title["Field Guide"]["id"]
    assert set(ostriches["chunk_ids"]) < set(birds["chunk_ids"]) and len(birds["chunk_ids"]) == 3
    assert len({tuple(n["chunk_ids"]) for n in nodes}) == len(nodes)  # no node repeats another
    assert all(n["method"] == "extractive" and n["text"] for n in nodes)
    assert "stripe" in by_title["Field Guide > Zebras"]["text"].lower()
    assert {k: summary.tree[k] for k in ("nodes", "sections", "documents")} == {
        "nodes": 4,
        "sections": 3,
        "documents": 1,
    }  # note: no node


def test_tree_is_kept_incrementally(guide, index_with):
    _, ix = index_with(guide, cfg=CFG)
    before = {n["id"]: n for n in _tree(ix)}
    write(
        guide,
        "second.md",
        "# Lions\n\nLions hunt at night in prides of up to twenty animals, and the "
        "lionesses do most of the hunting for the group.\n\nCubs stay with the pride for "
        "about two years before the young males are driven out to find a pride.\n",
    )
    summary, ix = index_with(guide, cfg=CFG)
    after = {n["id"]: n for n in _tree(ix)}
    assert summary.tree["nodes"] == 1 and set(before) < set(after)  # only the new document was summarised
    assert all(after[i] == before[i] for i in before)
    (guide / "guide.md").unlink()
    _, ix = index_with(guide, cfg=CFG)
    assert [n["title"] for n in _tree(ix)] == ["Lions"]  # a removed document takes its nodes along
    _, ix = index_with(guide, cfg=IndexConfig(chunk_tokens=40, chunk_min_tokens=5, tree=False))
    write(guide, "third.md", "# Hyenas\n\nHyenas laugh.\n\nThey also hunt.\n")
    _, ix = index_with(guide, cfg=IndexConfig(chunk_tokens=40, chunk_min_tokens=5, tree=False))
    assert _tree(ix) == []


def test_centroid_sentences_pick_central_sentences_once_in_order():
    texts = [
        "Overtime is limited to ten hours per week. Overtime is limited to ten hours per week!",
        "The cafeteria opens at noon. Overtime must be approved by the team lead in advance.",
        "Approved overtime is paid at 125 % of the hourly rate or taken as time off.",
    ]
    df = {"overtime": 1, "cafeteria": 1, "hours": 5, "week": 5}
    out = centroid_sentences(texts, df, n_chunks=100, sentences=3, max_chars=400)
    assert out.count("limited to ten hours") == 1  # near-duplicates are skipped
    assert "cafeteria" not in out and "approved by the team lead" in out
    assert out.index("limited") < out.index("team lead") < out.index("125")
    assert len(centroid_sentences(texts, df, 100, max_chars=60)) <= 60


@dataclass
class _Ctx:
    """What ``expand`` uses of a SearchContext."""

    hits: dict
    qvec: np.ndarray
    cfg: QueryConfig = field(default_factory=lambda: QueryConfig(settings={"hierarchical": {"children": 2}}))

    def hits_for(self, ranked):
        return [self.hits[i] for i, _ in ranked if i in self.hits]

    def query_vector(self):
        return self.qvec


def _hit(cid: str, vec, score=0.0) -> Hit:
    return Hit(
        chunk_id=cid,
        document_id="d",
        section_id="s",
        chunk_index=0,
        text=cid,
        header="",
        path="p",
        title="t",
        doc_type="",
        collection="default",
        line_start=1,
        line_end=1,
        token_count=1,
        score=score,
        vector=np.asarray(vec, dtype=np.float32),
    )


def test_expansion_discounts_children_keeps_best_score_and_dedupes():
    q = np.array([1.0, 0.0])
    own = {"a": [1, 0], "b": [0.9, 0.44], "c": [0.5, 0.87], "d": [0.0, 1.0], "e": [0.3, 0.95]}
    hits = {i: _hit(i, v) for i, v in own.items()}
    direct = {"a": _hit("a", own["a"], 0.95), "e": _hit("e", own["e"], 0.3)}
    nodes = [
        {"id": "n1", "similarity": 0.9, "chunk_ids": ["a", "b", "c", "d"]},
        {"id": "n2", "similarity": 0.5, "chunk_ids": ["c", "e"]},
    ]
    out = expand(_Ctx(hits, q), nodes, 0.8, direct)
    scores = {h.chunk_id: h.score for h in out}
    assert [h.chunk_id for h in out] == ["a", "b", "c", "e"]  # d: not among n1's two best children
    assert scores["a"] == 0.95  # a direct match better than its node's discounted score keeps its own
    assert scores["b"] == pytest.approx(0.72, abs=2e-3)  # node similarity × discount
    assert scores["c"] == pytest.approx(0.40, abs=2e-3) and scores["e"] == pytest.approx(0.40, abs=2e-3)
    assert scores["c"] > scores["e"]  # among one node's children the more similar comes first


def test_hierarchical_strategy_modes_context_scope_and_fallback(guide, tmp_path, index_with):
    write(
        guide,
        "policy.md",
        "---\ndoc_type: policy\n---\n# Ranger Policy\n\nRangers count zebras and "
        "ostriches every season, walking the same transects at dawn so that the numbers "
        "can be compared from one year to the next.\n\nCounts are reported to the park "
        "office, which keeps the records of every herd and every nest since the park "
        "was founded.\n",
    )
    _, ix = index_with(guide, cfg=CFG)
    for mode in ("tree", "collapsed"):
        r = ix.query(
            "how fast do ostriches run",
            QueryConfig(strategy="hierarchical", k=3).tuned(hierarchical={"mode": mode}),
        )
        assert r.strategy == "hierarchical" and r.plan.notes["tree_nodes"] and "fallback" not in r.plan.notes
        assert r.context_items and r.context_items[0]["type"] == "summary"
        assert "Ostriches" in r.passages[0].section
        assert len({c for p in r.passages for c in p.chunk_ids}) == sum(len(p.chunk_ids) for p in r.passages)
    scoped = ix.query("ostriches zebras", QueryConfig(strategy="hierarchical", filters={"doc_type": "policy"}))
    assert {i["title"] for i in scoped.context_items} == {"Ranger Policy"}  # its document node, no other
    assert scoped.passages and all(p.path.endswith("policy.md") for p in scoped.passages)
    with pytest.raises(BadQuery):
        ix.query("ostriches", QueryConfig(strategy="hierarchical", settings={"hierarchical": {"mode": "sideways"}}))
    flat = tmp_path / "flat"
    write(flat, "a.txt", "Zebras graze.\n")
    write(flat, "b.txt", "Ostriches run.\n")
    _, flat_ix = index_with(flat, name="flat")
    r = flat_ix.query("ostriches", QueryConfig(strategy="hierarchical"))
    assert r.plan.notes["fallback"].startswith("no summary-tree node") and r.passages


class _Knowledge:
    def __init__(self, rows):
        self.rows = rows

    def search(self, kind, vector, limit, collections=None):
        assert kind == "terms"
        return self.rows[:limit]


class _Reader:
    def __init__(self, rows):
        self.knowledge = _Knowledge(rows)


def test_related_terms_skip_query_words_variants_and_weak_neighbours():
    rows = [
        {"term": t, "similarity": s}
        for t, s in [
            ("overtime", 0.9),
            ("overtimes", 0.85),
            ("hours", 0.8),
            ("workload", 0.7),
            ("workloads", 0.69),
            ("compensation", 0.6),
            ("shift", 0.5),
            ("cafeteria", 0.2),
        ]
    ]
    got = expansion.related_terms(_Reader(rows), None, "limits on overtime hours", max_terms=3, min_similarity=0.45)
    assert got == [("workload", 0.7), ("compensation", 0.6), ("shift", 0.5)]
    assert expansion.related_terms(_Reader(rows), None, "overtime", min_similarity=0.95) == []


def test_expansion_terms_are_embedded_on_first_use_once(tmp_path, index_with, fake):
    root = tmp_path / "e"
    for i in range(12):
        write(
            root,
            f"d{i}.md",
            f"# Doc {i}\n\nOvertime rules {i}: compensation and workload apply to shift "
            f"{'workers' if i % 2 else 'staff'} in zone{i}.\n",
        )
    summary, ix = index_with(root)
    cache = ix.path / "cache" / "terms.npz"
    # indexing embeds chunks (and the probe texts the manifest records), no words
    assert fake.encoded == summary.chunks + len(PROBES) and not cache.exists()
    terms = ix.reader.term_vectors
    assert {"overtime", "compensation", "workload", "workers", "staff"} <= set(terms.terms)
    assert not any(len(t) < 4 for t in terms.terms) and terms.embedded == len(terms.terms) and cache.exists()
    before = fake.encoded
    again = ragkit.open(ix.path, embedder=fake).reader.term_vectors
    assert fake.encoded == before and again.terms == terms.terms  # the cache of this run
    write(root, "d0.md", "# Doc 0\n\nOvertime rules: compensation applies to zebras, zebras and zebras.\n")
    write(root, "d1.md", "# Doc 1\n\nZebras rest.\n")
    write(root, "d2.md", "# Doc 2\n\nZebras rest too.\n")
    _, ix = index_with(root)
    assert ix.reader.term_vectors.embedded == 1  # only the new word ("zebras")
    summary, ix = index_with(root, cfg=IndexConfig(expand=True), name="eager")
    assert (ix.path / "cache" / "terms.npz").exists() and "term_vectors" in summary.seconds


def test_expansion_fuses_a_bm25_run_of_the_related_terms(tmp_path):
    """An embedder that knows "remuneration" means "overtime": a query for overtime gets the word added, and
    the BM25 run of the expanded query is fused with the strategy's own lists."""
    fake = FakeEmbedder(dim=256, synonyms={"remuneration": "overtime"})
    root = tmp_path / "e"
    for i in range(4):
        write(root, f"o{i}.md", f"# Overtime {i}\n\nOvertime in team {i} needs approval.\n")
        write(root, f"r{i}.md", f"# Pay {i}\n\nRemuneration in branch {i} is paid monthly.\n")
        write(root, f"f{i}.md", f"# Garden {i}\n\nTomatoes in greenhouse {i} ripen slowly.\n")
    ragkit.index([root], tmp_path / "idx", embedder_factory=lambda c: fake)
    ix = ragkit.open(tmp_path / "idx", embedder=fake)
    r = ix.query("overtime", QueryConfig(strategy="hybrid", expand=True, k=8))
    assert r.plan.related_terms == [{"term": "remuneration", "similarity": 1.0}]
    assert "related_lexical" in r.timings_ms
    fused = [h for h in r.hits if "related0" in h.ranks]
    # each fused hit: the two lists' ranks, and the original query's own retrievers' where they found it
    assert fused and all({"original", "related0"} <= set(h.ranks) <= {"original", "related0", "dense", "lexical"}
                         for h in fused)  # fmt: skip
    assert all("dense" in h.ranks for h in fused if "original" in h.ranks and h.ranks["original"] <= 3)
    assert {h.path.split("/")[-1][0] for h in fused} == {"o", "r"}  # BM25 of "overtime remuneration"
    plain = ix.query("overtime", QueryConfig(strategy="hybrid", k=8))
    assert plain.plan.related_terms == [] and not any("related0" in h.ranks for h in plain.hits)


def test_llm_summaries_replace_extractive_ones_in_the_tree(guide, tmp_path, fake):
    # the model says nothing for other sections: their extractive summary stays
    writer = FakeGenerator(
        lambda p: " Zebras graze in herds; their stripes confuse flies." if "Title: Field Guide > Zebras" in p else ""
    )
    ragkit.index(
        [guide],
        tmp_path / "idx",
        cfg=IndexConfig(chunk_tokens=40, chunk_min_tokens=5, summaries="llm"),
        embedder_factory=lambda c: fake,
        generator_factory=lambda c: writer,
    )
    ix = ragkit.open(tmp_path / "idx", embedder=fake)
    nodes = {n["title"]: n for n in _tree(ix)}
    zebras = nodes["Field Guide > Zebras"]
    assert zebras["method"] == "llm" and zebras["text"] == "Zebras graze in herds; their stripes confuse flies."
    assert nodes["Field Guide"]["method"] == "extractive" and nodes["Field Guide"]["text"]
    assert sum("Summarise the following text" in p for p in writer.prompts) == len(nodes)
