"""Evidence graph, references, versions and structure-aware reranking (fake embedder)."""

import json
from dataclasses import replace

import pytest

import ragkit
from ragkit.config import QueryConfig
from ragkit.extract.refs import find_links, slug
from ragkit.legal import find_legal_refs, heading_key, law_keys
from ragkit.rerank.features import DEFAULT_WEIGHTS, FeatureContext, compute
from tests.conftest import needs_shared, write

# ---------------------------------------------------------------- detectors


@pytest.mark.parametrize(
    "text,raw,law,unit,numbers",
    [
        ("nach § 5 Abs. 2 ArbZG gilt", "§ 5 Abs. 2 ArbZG", "ArbZG", "§", ["5"]),
        ("gemäß §§ 3 bis 7 des Gesetzes", "§§ 3 bis 7", None, "§", ["3", "4", "5", "6", "7"]),
        ("Art. 12 schützt", "Art. 12", None, "art", ["12"]),
        ("Artikel 12 GG", "Artikel 12 GG", "GG", "art", ["12"]),
        ("§ 622 BGB regelt", "§ 622 BGB", "BGB", "§", ["622"]),
        ("§ 3 Satz 1 Nr. 2 KSchG", "§ 3 Satz 1 Nr. 2 KSchG", "KSchG", "§", ["3"]),
        ("enligt 3 kap. 5 § arbetsmiljölagen (1977:1160)", "3 kap. 5 §", "1977:1160", "§", ["5"]),
        ("se 12a § och", "12a §", None, "§", ["12a"]),
        ("5 § gäller", "5 §", None, "§", ["5"]),
    ],
)
def test_legal_reference_positive(text, raw, law, unit, numbers):
    refs = find_legal_refs(text)
    assert len(refs) == 1
    r = refs[0]
    assert (r.raw, r.target, r.unit, r.numbers) == (raw, law, unit, numbers)


def test_legal_reference_more_cases():
    r = find_legal_refs("enligt 3 kap. 5 § (1977:1160)")[0]
    assert r.chapter == "3" and r.target == "1977:1160"
    sfs = find_legal_refs("se SFS 1977:1160")
    assert [(x.raw, x.target) for x in sfs] == [("SFS 1977:1160", "1977:1160")]
    assert find_legal_refs("Art. 5 Abs. 1 Satz 2 des Vertrags")[0].subsection == "1"


@pytest.mark.parametrize(
    "text",
    ["um 10:30 Uhr", "Kapitel 3 und Abschnitt 4", "Artenvielfalt 12", "the § sign alone", "Paragraph 5", "Die Partei"],
)
def test_legal_reference_negative(text):
    assert find_legal_refs(text) == []


def test_html_links_become_references(tmp_path, index_with):
    write(
        tmp_path / "site",
        "index.html",
        '<h1>Home</h1><p>See <a href="faq.html#billing">billing</a> and <a href="https://x.org">web</a>.</p>',
    )
    write(tmp_path / "site", "faq.html", "<h1>FAQ</h1><h2>Billing</h2><p>Invoices are monthly.</p>")
    _, ix = index_with(tmp_path / "site")
    with ix.reader.duck() as store:
        refs = store.rows("SELECT r.target, s.heading FROM refs r JOIN sections s ON s.id = r.resolved_section_id")
    assert refs == [{"target": "faq.html#billing", "heading": "Billing"}]


def test_links_and_keys():
    links = find_links('see [intro](ch01.md#install), <a href="x.html">x</a> and [web](https://x.org)')
    assert [link.target for link in links] == ["ch01.md#install", "x.html"]
    assert heading_key("§ 3 Arbeitszeit") == ("§", "3") and heading_key("Art 12a") == ("art", "12a")
    assert heading_key("5 § Tillämpning") == ("§", "5") and heading_key("3 kap. Allmänt") == ("kap", "3")
    assert heading_key("Einleitung") is None
    assert law_keys("Arbeitszeitgesetz (ArbZG)", {"jurabk": "ArbZG"}) == {"arbzg"}
    assert slug("Installing Rust!") == "installing-rust"


# ---------------------------------------------------------------- graph on made-up documents


@pytest.fixture
def laws(tmp_path):
    root = tmp_path / "laws"
    write(
        root,
        "testg.md",
        """
        ---
        jurabk: TestG
        ---
        # Testgesetz (TestG)

        ## § 1 Zweck

        Dieses Gesetz regelt Pausen. Die Ruhezeit folgt aus § 2.

        ## § 2 Ruhezeit

        Nach der Arbeit gilt eine Ruhezeit von elf Stunden.

        ## § 3 Ausnahmen

        Ausnahmen von § 2 bedürfen der Genehmigung.
        """,
    )
    write(
        root,
        "guide.md",
        """
        # Guide

        ## Overview

        Read the [rest rules](testg.md#2-ruhezeit) and the [law](testg.md) first.

        Second paragraph of the overview, long enough to need a chunk of its own when chunks are small:
        it talks about breaks, rest periods, exceptions and who approves them in which order.
        """,
    )
    write(
        root,
        "policy-v1.md",
        """
        ---
        title: Break Policy 2020
        ---
        # Break Policy 2020

        Breaks last thirty minutes.
        """,
    )
    write(
        root,
        "policy-v2.md",
        """
        ---
        title: Break Policy 2024
        supersedes: policy-v1.md
        ---
        # Break Policy 2024

        Breaks last forty-five minutes.
        """,
    )
    return root


def test_graph_structure_and_traversal(laws, index_with):
    from ragkit.config import IndexConfig

    s, ix = index_with(laws, cfg=IndexConfig(chunk_tokens=60))
    g = ix.reader.graph
    st = g.stats()
    with ix.reader.duck() as store:
        counts = store.counts()
    assert st["node_kinds"] == {
        "document": counts["documents"],
        "section": counts["sections"],
        "chunk": counts["chunks"],
    }
    assert set(st["edge_types"]) == {"parent_of", "child_of", "adjacent_to", "references", "supersedes"}
    # chunk → section → parent section → document
    with ix.reader.duck() as store:
        sec2 = store.rows("SELECT id FROM sections WHERE heading = '§ 2 Ruhezeit'")[0]["id"]
        overview = store.rows("SELECT id FROM sections WHERE heading = 'Overview'")[0]["id"]
        c1 = store.rows(
            "SELECT c.id FROM chunks c JOIN sections s ON c.section_id = s.id WHERE s.heading = '§ 1 Zweck'"
        )[0]["id"]
    assert g.get_section(c1) and g.kind(g.get_parent(g.get_section(c1))) == "section"
    assert g.get_parent(g.get_parent(g.get_section(c1))) == g.get_document(c1)
    # bare "§ 2" in § 1 resolves to § 2 of the same law; the markdown link with #anchor too
    assert sec2 in g.neighbors(c1, "references")
    ov_chunks = g.get_children(overview)
    assert len(ov_chunks) == 2 and g.get_adjacent(ov_chunks[0]) == ov_chunks[1:]
    assert any(sec2 in g.neighbors(c, "references") for c in ov_chunks)
    sub = g.get_subgraph(c1, depth=1)
    assert c1 in sub and g.get_section(c1) in sub and sub.g.vcount() < g.g.vcount()
    # versions: v2 supersedes v1
    with ix.reader.duck() as store:
        latest = dict(store.con.execute("SELECT path, is_latest FROM documents").fetchall())
    assert latest["laws/policy-v1.md"] is False and latest["laws/policy-v2.md"] is True


def test_graph_follows_incremental_updates(laws, index_with):
    index_with(laws)
    (laws / "guide.md").unlink()
    write(
        laws,
        "testg.md",
        "# Testgesetz (TestG)\n\n## § 1 Zweck\n\nNur noch die Ruhezeit nach § 2.\n\n## § 2 Ruhezeit\n\nElf Stunden.\n",
    )
    _, ix = index_with(laws)
    g = ix.reader.graph
    with ix.reader.duck() as store:
        ids = {r["id"] for t in ("documents", "sections", "chunks") for r in store.rows(f"SELECT id FROM {t}")}
        dangling = store.con.execute(
            "SELECT count(*) FROM refs WHERE document_id NOT IN (SELECT id FROM documents)"
        ).fetchone()[0]
        sec2 = store.rows("SELECT id FROM sections WHERE heading = '§ 2 Ruhezeit'")[0]["id"]
    assert set(g.g.vs["name"]) == ids and dangling == 0
    # the guide's links left with it; the new § 1 → § 2 reference is the only one
    refs = [(g.g.vs[e.source]["name"], g.g.vs[e.target]["name"]) for e in g.g.es.select(type="references")]
    assert len(refs) == 1 and refs[0][1] == sec2 and g.get_section(refs[0][0]) != sec2


def test_query_reference_puts_section_first(laws, index_with):
    _, ix = index_with(laws)
    r = ix.query("§ 3 TestG", QueryConfig(k=3))
    assert r.passages[0].section == "Testgesetz (TestG) > § 3 Ausnahmen"
    assert r.plan.references[0]["raw"] == "§ 3 TestG" and r.plan.references[0]["section_ids"]
    assert r.passages[0].features["reference_match"] == 1.0
    r = ix.query("was steht in § 2 TestG", QueryConfig(k=3, strategy="naive"))
    assert r.passages[0].section == "Testgesetz (TestG) > § 2 Ruhezeit"


def test_versions_latest_by_default(laws, index_with):
    _, ix = index_with(laws)
    paths = {p.path for p in ix.query("breaks minutes", QueryConfig(k=5, strategy="lexical")).passages}
    assert "laws/policy-v2.md" in paths and "laws/policy-v1.md" not in paths
    paths = {
        p.path for p in ix.query("breaks minutes", QueryConfig(k=5, strategy="lexical", all_versions=True)).passages
    }
    assert {"laws/policy-v1.md", "laws/policy-v2.md"} <= paths


def test_version_of_flag(tmp_path, index_with, fake):
    write(tmp_path / "a", "old.md", "# Old\n\nzebra rules old\n")
    index_with(tmp_path / "a")
    write(tmp_path / "b", "new.md", "# New\n\nzebra rules new\n")
    ragkit.index(
        [tmp_path / "b"], tmp_path / "idx", version_of=str(tmp_path / "a" / "old.md"), embedder_factory=lambda c: fake
    )
    ix = ragkit.open(tmp_path / "idx", embedder=fake)
    cfg = QueryConfig(strategy="lexical")
    assert [p.path for p in ix.query("zebra rules", cfg).passages] == ["b/new.md"]
    cfg = replace(cfg, all_versions=True)
    assert {p.path for p in ix.query("zebra rules", cfg).passages} == {"a/old.md", "b/new.md"}


# ---------------------------------------------------------------- features


def test_features_and_modes(laws, index_with):
    _, ix = index_with(laws)
    r = ix.query("Ruhezeit Ausnahmen", QueryConfig(k=5, strategy="lexical"))
    feats = {h.chunk_id: h.features for h in r.hits}
    for f in feats.values():
        assert set(f) == set(DEFAULT_WEIGHTS["balanced"]) and all(0.0 <= v <= 1.0 for v in f.values())
    relevance = [f["text_relevance"] for f in feats.values()]
    assert max(relevance) == 1.0 and min(relevance) == 0.0  # retrieval scores, min-max normalised
    weights = DEFAULT_WEIGHTS["balanced"]
    assert r.plan.weights == weights
    for h in r.hits:  # the final score is the weighted sum, and the hits are ordered by it
        assert h.score == pytest.approx(sum(weights[name] * value for name, value in h.features.items()))
    assert [h.score for h in r.hits] == sorted((h.score for h in r.hits), reverse=True)
    assert max(f["section_match"] for f in feats.values()) == 0.5  # one of two words: "§ 2 Ruhezeit" or "§ 3 Ausnahmen"
    none = ix.query("Ruhezeit Ausnahmen", QueryConfig(k=5, strategy="lexical", rerank="none"))
    assert none.hits[0].features == {} and none.plan.rerank["used"] == "none"
    for mode in ("precision", "recall"):
        assert ix.query("Ruhezeit", QueryConfig(mode=mode)).plan.weights == DEFAULT_WEIGHTS[mode]


def test_feature_values_on_known_hits(laws, index_with):
    from ragkit.config import IndexConfig

    _, ix = index_with(laws, cfg=IndexConfig(chunk_tokens=60))
    with ix.reader.duck() as store:
        rows = store.rows(
            "SELECT c.id, c.section_id, c.chunk_index, c.document_id FROM chunks c "
            "JOIN documents d ON d.id = c.document_id WHERE d.path LIKE '%guide.md' "
            "ORDER BY c.chunk_index"
        )
    from tests.test_units import hit

    hits = [
        hit(r["id"], score=s, doc=r["document_id"], sec=r["section_id"], idx=r["chunk_index"])
        for r, s in zip(rows, [1.0, 0.5])
    ]
    for h in hits:
        h.header = "Guide > Overview"
        h.doc_type = "policy"
    from ragkit.retrieve.planner import plan_query

    routing = set(plan_query("overview policy", {"policy", "notes"}).doc_type_routing)
    f = compute(hits, FeatureContext("overview policy", ix.reader.graph, doc_types=routing))
    a, b = hits[0].chunk_id, hits[-1].chunk_id
    assert len(hits) == 2
    assert f[a]["text_relevance"] == 1.0 and f[b]["text_relevance"] == 0.0
    assert f[a]["section_match"] == 0.5  # "overview" is in the breadcrumb, "policy" is not
    assert f[a]["doc_type_match"] == 1.0  # "policy" in the query routes to policy documents
    assert f[b]["parent_relevance"] == 1.0 and f[a]["parent_relevance"] == 0.0  # best sibling's score
    assert f[b]["adjacency_bonus"] == 0.5 and f[a]["adjacency_bonus"] == 0.0  # one relevant neighbour
    assert f[b]["position_in_doc"] < f[a]["position_in_doc"]
    assert f[a]["is_latest"] == 1.0 and f[a]["reference_match"] == 0.0
    assert f[a]["confidence"] == hits[0].boundary_confidence == 1.0


def test_weights_from_config_file(tmp_path):
    from ragkit.config import load_config
    from ragkit.errors import RagkitError

    (tmp_path / "ragkit.toml").write_text("[rerank.precision]\nsection_match = 0.5\n")
    _, q = load_config(tmp_path)
    assert q.weights == {"precision": {"section_match": 0.5}}
    idx = tmp_path / "idx"
    idx.mkdir()
    (idx / "ragkit.toml").write_text("[rerank.precision]\nconfidence = 0.3\nsection_match = 0.1\n[query]\nk = 7\n")
    _, q = load_config(tmp_path, index_dir=idx)  # the working directory's file wins where both set a key
    assert q.weights == {"precision": {"section_match": 0.5, "confidence": 0.3}} and q.k == 7
    (tmp_path / "ragkit.toml").write_text("[rerank.precision]\nnonsense = 1\n")
    with pytest.raises(RagkitError):
        load_config(tmp_path)


def test_trace_and_graph_cli(laws, tmp_path):
    from typer.testing import CliRunner

    from ragkit.cli.app import app
    from ragkit.library import Models
    from tests.fakes import FakeEmbedder

    fake = FakeEmbedder()
    models = Models(embedder=fake)  # handed to the CLI (the context object): it indexes and asks with it
    runner = CliRunner()
    idx = str(tmp_path / "idx")
    assert runner.invoke(app, ["index", str(laws), "--index", idx], obj=models).exit_code == 0
    trace = tmp_path / "trace.jsonl"
    r = runner.invoke(
        app,
        ["query", "Ruhezeit", "--index", idx, "--trace", str(trace), "--explain"],
        env={"COLUMNS": "200"},
        obj=models,
    )
    assert r.exit_code == 0 and "reference_match" in r.output
    line = json.loads(trace.read_text().splitlines()[0])
    assert line["candidates"] and set(line["candidates"][0]["features"]) == set(DEFAULT_WEIGHTS["balanced"])
    r = runner.invoke(app, ["graph", "stats", "--index", idx, "--json"], obj=models)
    st = json.loads(r.output)
    assert st["node_kinds"]["document"] == 4 and any(x["kind"] == "law" for x in st["references"])
    out = tmp_path / "g.json"
    assert (
        runner.invoke(app, ["graph", "export", str(out), "--format", "json", "--index", idx], obj=models).exit_code == 0
    )
    data = json.loads(out.read_text())
    assert data["nodes"] and data["links"] and {"source", "target", "type"} <= set(data["links"][0])
    assert (
        runner.invoke(app, ["graph", "export", str(tmp_path / "g.graphml"), "--index", idx], obj=models).exit_code == 0
    )
    assert (tmp_path / "g.graphml").read_text().startswith("<?xml")


# ---------------------------------------------------------------- the hand-made legal query set


@needs_shared("german-laws")
def test_legal_reference_queries_hit_their_section(tmp_path, fake):
    """Every query naming a § / Art. of an indexed law returns that section first (fake embedder:
    the reference feature, not the embedding, has to do it; tests/test_quality.py runs the real model)."""
    from tests import quality

    ragkit.index([quality.GERMAN_LAWS], tmp_path / "laws", embedder_factory=lambda c: fake)
    ix = ragkit.open(tmp_path / "laws", embedder=fake)
    queries = quality.legal_queries()
    assert len(queries) == 24 and quality.legal_misses(ix, queries) == []
