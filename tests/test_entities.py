"""Rule-based entities and relations, the entity graph, and the hippo strategy (fake embedder)."""

import pytest

from ragkit.config import QueryConfig
from ragkit.extract.entities import extract, normalize, query_entities
from tests.conftest import write


def keys(text, context=None):
    return {m.key for m in extract(text, context).mentions}


def test_names_acronyms_dates_and_no_stopwords():
    found = keys("However, Scott Derrickson directed it in March 2005. The film was shot by J. R. Smith for NASA.")
    assert {"scott derrickson", "march 2005", "j r smith", "nasa"} <= found
    assert not found & {"however", "the", "the film"}
    assert "haymo of faversham" in keys("Haymo of Faversham's work was translated.")
    assert keys("Tim Brown. The Game ended.") >= {"tim brown", "game"} and "tim brown the game" not in keys(
        "Tim Brown. The Game ended."
    )


def test_acronym_alias_merges_into_long_form():
    r = extract("The World Health Organization (WHO) met. Later WHO said no.")
    assert r.aliases == {"who": "world health organization"}
    assert [m.key for m in r.mentions if m.surface == "WHO"] == ["world health organization"] * 2
    assert normalize("Faversham’s  Abbey!") == "faversham abbey"


def test_context_entities_link_the_chunk_but_relate_to_nothing():
    r = extract(
        "Lester Smith designed the game with Tim Brown. Much later, after many years of work and "
        "very many other things happened, Fast Forward Games published it.",
        ["Demon Dice"],
    )
    w = {(a, b): weight for a, b, weight, _ in r.relations}
    assert w[("lester smith", "tim brown")] > 0.5  # same sentence, close together
    assert ("demon dice", -1) in {(m.key, m.sentence) for m in r.mentions}  # the title: a mention of the chunk
    assert not any("demon dice" in pair for pair in w)  # no heading × everything product
    assert ("fast forward games", "lester smith") not in w  # different sentences, no relation
    assert {n for *_, n in r.relations} == {0}  # described by its sentence


def test_relations_are_bounded_per_mention_and_by_distance():
    from ragkit.extract.entities import PAIR_FLOOR, PAIRS_PER_MENTION

    names = [
        f"{first} {last}"
        for first, last in zip(
            "Anna Berta Carla Dora Emil Frida Gustav Hanna Ida Jonas Karl Lena".split(),
            "Adams Brown Clark Dalton Evans Fisher Grant Hughes Irving Jones Keller Lewis".split(),
        )
    ]
    r = extract("The committee met " + ", ".join(names) + " in Geneva.")
    assert len({m.key for m in r.mentions}) == 13
    degree = {}
    for a, b, weight, _ in r.relations:
        assert weight >= PAIR_FLOOR
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
    assert len(r.relations) <= 13 * PAIRS_PER_MENTION < 13 * 12 / 2  # not every pair of a long list
    assert ("anna adams", "lena lewis") not in {(a, b) for a, b, *_ in r.relations}  # too far apart


def test_query_entities_include_ngrams():
    ks = dict(query_entities("Which band did Kurt Cobain found?"))
    assert "kurt cobain" in ks and "which band" in ks  # n-grams are looked up, the graph decides


@pytest.fixture
def bridge(tmp_path):
    """A two-hop question: the answer paragraph does not name the asked-about person."""
    root = tmp_path / "wiki"
    write(
        root,
        "corpus.jsonl",
        "\n".join(
            [
                '{"_id": "a", "title": "Kurt Cobain", "text": "Kurt Cobain was the frontman of Nirvana, a band from Aberdeen."}',
                '{"_id": "b", "title": "Nirvana", "text": "Nirvana was formed in Aberdeen in 1987 and released Nevermind."}',
                '{"_id": "c", "title": "Pearl Jam", "text": "Pearl Jam is a rock band formed in Seattle in 1990."}',
                '{"_id": "d", "title": "Soundgarden", "text": "Soundgarden was a rock band formed in Seattle in 1984."}',
            ]
        )
        + "\n",
    )
    return root


def test_ppr_finds_the_second_hop(bridge, index_with):
    _, ix = index_with(bridge)
    g = ix.reader.entity_graph
    seeds = g.seeds(["kurt cobain"])
    assert seeds and g.stats()["entities"] > 5
    ranked = [cid for cid, _ in g.ppr(seeds, top=4)]
    with ix.reader.duck() as store:
        ext = dict(
            store.con.execute(
                "SELECT c.id, d.external_id FROM chunks c JOIN documents d ON d.id = c.document_id"
            ).fetchall()
        )
    order = [ext[c] for c in ranked]
    assert order[:2] == ["a", "b"]  # Cobain's own paragraph, then Nirvana's (reached through "nirvana")
    # vector_seeds 0: the fake embedder's bag-of-words "nearest entities" would be noise here; graph_weight 1.0:
    # only the walk counts (the fake embedder ranks Soundgarden's "rock band formed" above Nirvana's paragraph)
    r = ix.query(
        "When was the band of Kurt Cobain formed?",
        QueryConfig(strategy="hippo", k=2, rerank="none", settings={"hippo": {"vector_seeds": 0, "graph_weight": 1.0}}),
    )
    assert {p.path.split("#")[-1] for p in r.passages} == {"a", "b"}
    assert "kurt cobain" in r.plan.notes["seed_entities"]


def test_walk_equals_scikit_networks_pagerank(bridge, index_with):
    """The kept random-surfer matrix gives scikit-network's personalized PageRank, on the index's graph and on
    a random graph with isolated nodes (no out-edges)."""
    import numpy as np
    import scipy.sparse as sp
    from sknetwork.ranking import PageRank

    from ragkit.store.entity_graph import PPR_ITERATIONS, Walk

    _, ix = index_with(bridge)
    rng = np.random.default_rng(7)
    a = sp.random(60, 60, density=0.05, random_state=7, format="csr")
    a = (a + a.T).tolil()
    a[:, 5] = 0
    a[5, :] = 0  # a node without edges
    a = a.tocsr()
    a.eliminate_zeros()
    for adjacency in (ix.reader.entity_graph.adjacency(), a):
        reset = np.zeros(adjacency.shape[0])
        reset[rng.choice(adjacency.shape[0], 3, replace=False)] = [2.0, 1.0, 0.5]
        for damping in (0.5, 0.85):
            want = PageRank(damping_factor=damping, solver="piteration", n_iter=PPR_ITERATIONS, tol=0).fit_predict(
                adjacency, weights=reset
            )
            np.testing.assert_allclose(Walk(adjacency, damping).run(reset), want, rtol=1e-9, atol=1e-12)


def test_hippo_falls_back_to_hybrid(bridge, index_with):
    _, ix = index_with(bridge)
    r = ix.query("zzz qqq", QueryConfig(strategy="hippo"))
    assert "fallback" in r.plan.notes


def test_entities_follow_incremental_updates(bridge, index_with):
    index_with(bridge)
    (bridge / "corpus.jsonl").write_text(
        '{"_id": "c", "title": "Pearl Jam", "text": "Pearl Jam is a rock band formed in Seattle in 1990."}\n'
    )
    _, ix = index_with(bridge)
    with ix.reader.duck() as store:
        orphans = store.con.execute(
            "SELECT count(*) FROM mentions WHERE chunk_id NOT IN (SELECT id FROM chunks)"
        ).fetchone()[0]
        ents = {r[0] for r in store.con.execute("SELECT DISTINCT entity FROM mentions").fetchall()}
    assert orphans == 0 and "kurt cobain" not in ents and "pearl jam" in ents
    assert not ix.reader.entity_graph.has_entity("kurt cobain")


def test_show_entity_and_graph_stats_cli(bridge, tmp_path):
    import json

    from typer.testing import CliRunner

    from ragkit.cli.app import app
    from ragkit.library import Models
    from tests.fakes import FakeEmbedder

    fake = FakeEmbedder()
    models = Models(embedder=fake)  # handed to the CLI (the context object): it indexes and asks with it
    runner = CliRunner()
    idx = str(tmp_path / "idx")
    assert runner.invoke(app, ["index", str(bridge), "--index", idx], obj=models).exit_code == 0
    r = runner.invoke(app, ["show", "entity", "Nirvana", "--index", idx, "--json"], obj=models)
    info = json.loads(r.output)
    assert info["entity"] == "nirvana" and info["chunks"] == 2 and "Nirvana" in info["aliases"]
    assert any(x["other"] == "kurt cobain" for x in info["relations"])
    assert runner.invoke(app, ["show", "entity", "Nirvana", "--index", idx], obj=models).exit_code == 0
    assert runner.invoke(app, ["show", "entity", "nobody here", "--index", idx], obj=models).exit_code == 6
    st = json.loads(runner.invoke(app, ["graph", "stats", "--index", idx, "--json"], obj=models).output)
    assert st["entity_graph"]["entities"] > 5 and st["entity_graph"]["chunks"] == 4
    (coll,) = st["knowledge"]
    assert coll["entities"] == st["entity_graph"]["entities"] and coll["relations"] > 0 and coll["communities"] >= 1


def test_leiden_finds_known_clusters_and_reports():
    from ragkit.extract.communities import detect, leiden, report

    def clique(names, w=1.0):
        return [(a, b, w) for i, a in enumerate(names) for b in names[i + 1 :]]

    left, right = ["a1", "a2", "a3", "a4", "a5"], ["b1", "b2", "b3", "b4", "b5"]
    edges = clique(left) + clique(right) + [("a1", "b1", 0.1)]
    parts = leiden(edges)
    assert sorted(map(sorted, parts)) == [left, right]
    assert leiden(edges) == parts  # deterministic
    rels = [{"a": a, "b": b, "weight": w, "description": f"{a} meets {b}."} for a, b, w in edges]
    found = detect(rels, max_size=3)
    top = [c for c in found if c.level == 0]
    assert len(top) == 2 and {len(c.members) for c in top} == {5}
    assert all(c.level == 1 and c.parent_id in {t.id for t in top} for c in found if c.level)
    assert top[0].title == ", ".join(top[0].top_entities[:3])
    report(top[0], [r for r in rels if r["a"] in top[0].members and r["b"] in top[0].members])
    assert top[0].report.startswith(f"Community: {top[0].title}\nEntities: ") and "meets" in top[0].report


def test_communities_stored_and_follow_updates(bridge, index_with):
    _, ix = index_with(bridge)
    with ix.reader.duck() as store:
        n = store.con.execute("SELECT count(*) FROM communities").fetchone()[0]
        members = store.con.execute(
            "SELECT count(*) FROM community_members m LEFT JOIN mentions x "
            "ON x.entity = m.entity WHERE x.entity IS NULL"
        ).fetchone()[0]
    assert n >= 1 and members == 0  # every member is a mentioned entity
    (bridge / "corpus.jsonl").write_text('{"_id": "c", "title": "Pearl Jam", "text": "Pearl Jam is a band."}\n')
    _, ix = index_with(bridge)
    with ix.reader.duck() as store:
        orphans = store.con.execute(
            "SELECT count(*) FROM community_members m LEFT JOIN mentions x "
            "ON x.entity = m.entity WHERE x.entity IS NULL"
        ).fetchone()[0]
    assert orphans == 0


def test_global_strategy_returns_reports_and_member_chunks(bridge, index_with):
    _, ix = index_with(bridge)
    r = ix.query("rock bands from Seattle", QueryConfig(strategy="global", k=3))
    assert r.passages and r.context_items and r.context_items[0]["type"] == "community"
    assert r.context_items[0]["report"].startswith("Community: ")
    from ragkit.render import result_dict

    d = result_dict(r)
    assert d["context"][0]["id"] == r.context_items[0]["id"] and "packed_context" not in d


def test_global_falls_back_without_communities(tmp_path, index_with):
    from ragkit.config import IndexConfig

    write(tmp_path / "d", "a.md", "# A\n\nplain text without names\n")
    _, ix = index_with(tmp_path / "d", cfg=IndexConfig(extract="none"))
    r = ix.query("plain text", QueryConfig(strategy="global"))
    assert "fallback" in r.plan.notes and r.passages


def test_local_strategy_entities_relations_chunks(bridge, index_with):
    _, ix = index_with(bridge)
    # graph_weight 1.0: only the graph's own chunk ranking counts (the fake embedder's lists would blur it)
    r = ix.query(
        "Where did Kurt Cobain's band come from?",
        QueryConfig(strategy="local", k=3, settings={"local": {"graph_weight": 1.0}}),
    )
    kinds = [i["type"] for i in r.context_items]
    assert kinds and kinds[0] == "entity" and "relation" in kinds
    assert r.context_items[0]["entity"] == "kurt cobain"
    rel = next(i for i in r.context_items if i["type"] == "relation")
    assert rel["description"]
    found = [p.path.split("#")[-1] for p in r.passages]
    assert set(found[:2]) == {"a", "b"}  # the second hop is reached through "nirvana"
    g = ix.reader.entity_graph
    scores, _ = g.neighbourhood({"kurt cobain": 1.0}, hops=1)
    scores2, _ = g.neighbourhood({"kurt cobain": 1.0}, hops=2)
    assert set(scores) <= set(scores2) and "nirvana" in scores
    assert "fallback" in ix.query("zzz qqq", QueryConfig(strategy="local")).plan.notes
