"""Canonical entities and relations, their vector tables, scoping by collection, incremental communities,
and the light strategy (fake embedder)."""

import json

import pytest

import ragkit
from ragkit.config import IndexConfig, QueryConfig
from tests.conftest import write


def jsonl(*docs):
    return "\n".join(json.dumps({"_id": i, "title": t, "text": x}) for i, t, x in docs) + "\n"


def test_alias_declared_in_one_document_merges_mentions_in_another(tmp_path, index_with):
    root = tmp_path / "d"
    write(root, "a.md", "# Health\n\nThe World Health Organization (WHO) coordinates vaccine programmes.\n")
    write(root, "b.md", "# Travel\n\nTravellers should read what WHO advises about Malaria before a trip.\n")
    _, ix = index_with(root)
    with ix.reader.duck() as store:
        info = store.knowledge.entity("WHO")
        assert info["entity"] == "world health organization" and "who" in info["aliases"]
        assert {s["path"].split("/")[-1] for s in info["sources"]} == {"a.md", "b.md"}
        assert not store.knowledge.entity_rows(["who"])  # no separate entity for the alias
        row = store.knowledge.entity_rows(["world health organization"])[0]
        assert "coordinates vaccine" in row["description"] and row["type"] == "organisation"
        pair = store.knowledge.relation_rows([("malaria", "world health organization")])
        assert pair and "advises" in pair[0]["description"]
    assert ix.reader.entity_graph.seeds(["who"])  # a query naming the alias finds the entity
    (root / "a.md").unlink()  # the declaration is gone: WHO is its own entity again
    _, ix = index_with(root)
    with ix.reader.duck() as store:
        assert store.knowledge.entity("WHO")["entity"] == "who"
        assert not store.knowledge.entity_rows(["world health organization"])
        orphans = store.con.execute(
            "SELECT (SELECT count(*) FROM relations WHERE a NOT IN (SELECT key FROM entities) "
            "OR b NOT IN (SELECT key FROM entities)) + (SELECT count(*) FROM community_members "
            "WHERE entity NOT IN (SELECT key FROM entities))"
        ).fetchone()[0]
    assert orphans == 0


def test_knowledge_vectors_are_derived_from_chunk_vectors_not_stored(tmp_path, index_with, fake):
    root = tmp_path / "d"
    write(
        root,
        "corpus.jsonl",
        jsonl(
            ("a", "Kurt Cobain", "Kurt Cobain was the frontman of Nirvana."),
            ("b", "Nirvana", "Nirvana was formed in Aberdeen in 1987 by Kurt Cobain."),
        ),
    )
    _, ix = index_with(root)
    import lancedb
    import numpy as np

    assert set(lancedb.connect(str(ix.path / "lance")).list_tables().tables) == {"chunks"}
    with ix.reader.duck() as store:
        columns = {
            t: {r[1] for r in store.con.execute(f"PRAGMA table_info('{t}')").fetchall()}
            for t in ("entities", "relations", "communities")
        }
        chunk_ids = [
            r[0]
            for r in store.con.execute(
                "SELECT DISTINCT chunk_id FROM mentions WHERE entity = 'nirvana' ORDER BY chunk_id"
            ).fetchall()
        ]
    assert not any("vector" in c or "description" in c for c in columns.values())
    ids, mat = ix.reader.chunks.all_vectors()
    mean = mat[[ids.index(c) for c in chunk_ids]].mean(axis=0)
    rows, vectors = ix.reader.knowledge.matrix("entities")
    got = vectors[[r["key"] for r in rows].index("nirvana")]
    assert np.allclose(got, mean / np.linalg.norm(mean), atol=1e-6)  # the mean of the chunks that mention it
    found = ix.reader.knowledge.search("entities", mean, 3)
    assert found[0]["key"] == "nirvana" and found[0]["chunk_ids"] == chunk_ids and len(chunk_ids) == 2
    assert found[0]["similarity"] > 0.999 and "Nirvana was formed in Aberdeen" in found[0]["description"]
    rel = ix.reader.knowledge.search("relations", fake.encode_query("Nirvana Aberdeen"), 50)
    pair = next(r for r in rel if {r["a"], r["b"]} == {"aberdeen", "nirvana"})
    assert pair["description"] == "Nirvana was formed in Aberdeen in 1987 by Kurt Cobain."


@pytest.fixture
def two_collections(tmp_path, index_with):
    """The same names in two collections: Mercury the planet, Mercury the metal."""
    astro, chem = tmp_path / "astro", tmp_path / "chem"
    write(
        astro,
        "corpus.jsonl",
        jsonl(
            (
                "p1",
                "Mercury",
                "Mercury is the smallest planet and orbits closest to the Sun. NASA sent Messenger to Mercury in 2004.",
            ),
            ("p2", "Venus", "Venus is the hottest planet. NASA and Mercury missions studied the Sun."),
        ),
    )
    write(
        chem,
        "corpus.jsonl",
        jsonl(
            ("m1", "Mercury", "Mercury is a toxic liquid metal. Thermo Labs used Mercury in thermometers until 2004."),
            (
                "m2",
                "Thermometer",
                "A Thermometer from Thermo Labs measures heat. Mercury expands when warm. "
                "Thermo Labs filled each Thermometer with Mercury.",
            ),
        ),
    )
    index_with(astro, cfg=IndexConfig(collection="astro"))
    _, ix = index_with(chem, cfg=IndexConfig(collection="chem"))
    return ix


@pytest.mark.parametrize("strategy", ["local", "light", "global", "hippo"])
def test_scoping_keeps_other_collections_text_out(two_collections, strategy):
    ix = two_collections
    with ix.reader.duck() as store:
        rows = {r["collection"]: r for r in store.knowledge.entity_rows(["mercury"])}
    assert set(rows) == {"astro", "chem"} and "planet" in rows["astro"]["description"]
    assert "metal" in rows["chem"]["description"] and "planet" not in rows["chem"]["description"]
    cfg = QueryConfig(strategy=strategy, k=5, filters={"collection": "chem"})
    r = ix.query("What is Mercury used for, says NASA?", cfg)
    assert r.passages and {p.collection for p in r.passages} == {"chem"}
    blob = json.dumps(r.context_items)
    for word in ("planet", "NASA sent", "Venus", "orbits"):
        assert word not in blob, (strategy, word)
    assert all(i["collection"] == "chem" for i in r.context_items)
    assert bool(r.context_items) == (strategy != "hippo")  # hippo ranks chunks and adds no context items
    unscoped = ix.query("What is Mercury, the planet NASA studied?", QueryConfig(strategy=strategy, k=5))
    assert {p.collection for p in unscoped.passages} == {"astro", "chem"}


def test_doc_filter_hides_descriptions_from_excluded_documents(two_collections):
    cfg = QueryConfig(strategy="local", k=5, filters={"collection": "chem", "title": "Thermometer"})
    r = two_collections.query("Thermo Labs and Mercury", cfg)
    assert {p.path.split("#")[-1] for p in r.passages} == {"m2"}
    assert "toxic" not in json.dumps(r.context_items)  # m1's sentence is outside the filter


def test_communities_recomputed_only_where_documents_changed(tmp_path, index_with):
    root = tmp_path / "d"
    band = [
        ("a", "Kurt Cobain", "Kurt Cobain, Krist Novoselic and Dave Grohl formed Nirvana in Aberdeen."),
        ("b", "Nirvana", "Nirvana with Kurt Cobain and Dave Grohl recorded Nevermind for Geffen Records."),
    ]
    space = [
        ("c", "Apollo", "Neil Armstrong and Buzz Aldrin flew Apollo Eleven for NASA to the Moon."),
        ("d", "Moon", "Buzz Aldrin and Neil Armstrong walked on the Moon while Michael Collins orbited."),
    ]
    write(root, "band.jsonl", jsonl(*band))
    write(root, "space.jsonl", jsonl(*space))
    _, ix = index_with(root)
    with ix.reader.duck() as store:
        before = dict(store.con.execute("SELECT id, title FROM communities").fetchall())
        first = store.last_run()["summary"]["knowledge"]
    assert len(before) >= 2 and first["communities"] == len(before)
    band[1] = ("b", "Nirvana", "Nirvana with Kurt Cobain and Dave Grohl recorded Bleach for Sub Pop Records.")
    write(root, "band.jsonl", jsonl(*band))
    _, ix = index_with(root)
    with ix.reader.duck() as store:
        after = dict(store.con.execute("SELECT id, title FROM communities").fetchall())
        second = store.last_run()["summary"]["knowledge"]
        space_ids = {
            r[0]
            for r in store.con.execute(
                "SELECT DISTINCT community_id FROM community_members WHERE entity = 'neil armstrong'"
            ).fetchall()
        }
    assert space_ids and space_ids <= set(before) & set(after)  # untouched: same ids, same titles
    assert all(after[i] == before[i] for i in space_ids)
    assert 0 < second["communities"] < len(after)  # only the band's communities were recomputed
    assert second["entities"] == first["entities"]  # the same names: Bleach for Nevermind, Sub Pop for Geffen


def test_light_returns_entities_relations_and_chunks(tmp_path, index_with):
    root = tmp_path / "d"
    write(
        root,
        "corpus.jsonl",
        jsonl(
            ("a", "Kurt Cobain", "Kurt Cobain was the frontman of Nirvana, a band from Aberdeen."),
            ("b", "Nirvana", "Nirvana was formed in Aberdeen in 1987 and released Nevermind."),
            ("c", "Pearl Jam", "Pearl Jam is a rock band formed in Seattle in 1990."),
        ),
    )
    _, ix = index_with(root)
    r = ix.query("Nirvana Aberdeen", QueryConfig(strategy="light", k=3, settings={"light": {"graph_weight": 1.0}}))
    kinds = {i["type"] for i in r.context_items}
    assert kinds == {"entity", "relation"} and r.passages
    assert {p.path.split("#")[-1] for p in r.passages[:2]} == {"a", "b"}
    assert all(i["description"] for i in r.context_items if i["type"] == "relation")
    write(tmp_path / "plain", "a.md", "# A\n\nplain text without names\n")
    _, plain = index_with(tmp_path / "plain", cfg=IndexConfig(extract="none"), name="plain")
    assert "fallback" in plain.query("plain text", QueryConfig(strategy="light")).plan.notes


def test_memory_rows_equal_the_stores(two_collections):
    """A warm reader's in-memory knowledge rows (ragkit/store/knowledge/rows.py) give what the store's look-ups give:
    entity rows with descriptions, relation rows, community reports and the chunks of communities."""
    from ragkit.store.knowledge.rows import KnowledgeMemory, StoreRows

    reader = two_collections.reader
    with reader.duck() as store:
        keys = [r[0] for r in store.con.execute("SELECT DISTINCT entity FROM mentions ORDER BY 1").fetchall()]
        pairs = [tuple(r) for r in store.con.execute("SELECT DISTINCT a, b FROM cooc ORDER BY 1, 2").fetchall()]
        communities = store.rows(
            "SELECT id, collection, level, parent_id, title, top_entities, written FROM communities ORDER BY id"
        )
        memory = KnowledgeMemory(store)
    rows = StoreRows(reader.duck)
    assert len(keys) > 5 and len(pairs) > 5 and communities

    def canon(items):
        return sorted(json.dumps(i, sort_keys=True, default=str) for i in items)

    assert canon(memory.entity_rows(keys)) == canon(rows.entity_rows(keys))
    assert canon(memory.relation_rows(pairs)) == canon(rows.relation_rows(pairs))
    assert canon(memory.community_reports([dict(c) for c in communities])) == canon(
        rows.community_reports([dict(c) for c in communities])
    )
    ids = [c["id"] for c in communities]
    assert memory.community_chunks(ids, 50) == rows.community_chunks(ids, 50)
    assert any("Mercury" in (r["description"] or "") for r in memory.entity_rows(["mercury"]))


def test_a_reader_keeps_knowledge_rows_in_memory_from_its_second_query(two_collections):
    from ragkit.store.knowledge.rows import KnowledgeMemory, StoreRows

    ix = ragkit.open(two_collections.path, embedder=two_collections.reader.embedder)
    first = ix.query("Which labs used Mercury in thermometers?", QueryConfig(strategy="local"))
    assert isinstance(ix.reader.knowledge_rows(), StoreRows)
    second = ix.query("Which labs used Mercury in thermometers?", QueryConfig(strategy="local"))
    assert isinstance(ix.reader.knowledge_rows(), KnowledgeMemory)
    assert [p.chunk_ids for p in first.passages] == [p.chunk_ids for p in second.passages]
    assert first.context_items == second.context_items
