"""German and Swedish compounds: split by word frequency, indexed and searched by BM25 beside the words."""

import dataclasses

import pytest

from ragkit.config import QueryConfig
from ragkit.store import lance as lance_store
from ragkit.text import compound_parts, split_compound
from tests.conftest import write


def test_compounds_split_into_known_words():
    assert split_compound("Mittagspause", "de") == ["mittag", "pause"]  # linking "s" dropped
    assert split_compound("Ruhepausen", "de") == ["ruhe", "pausen"]
    assert split_compound("Kündigungsschutz", "de") == ["kündigung", "schutz"]
    assert split_compound("Betriebsratswahl", "de") == ["betriebsrat", "wahl"]  # fewer parts win a close call
    assert split_compound("arbetsmiljölagen", "sv") == ["arbetsmiljö", "lagen"]


def test_frequent_words_participles_and_endings_stay_whole():
    assert split_compound("Verbraucher", "de") == []  # no "verb" + "raucher": the word itself is more frequent
    assert split_compound("Unternehmen", "de") == []
    assert split_compound("ausgefertigt", "de") == []  # German compounds of interest are capitalised nouns
    assert split_compound("Unversehrtheit", "de") == []  # "-heit" is an ending, not a word
    assert split_compound("Mittagspause", "en") == [] and split_compound("Haus", "de") == []
    assert compound_parts("Die Ruhepausen und die Mittagspause, die Ruhepausen.", "de") == [
        "ruhe",
        "pausen",
        "mittag",
        "pause",
    ]
    # a query's words: lower case split too, words English knows left whole
    assert compound_parts("wie lange ist die mittagspause?", "de", query=True) == ["mittag", "pause"]
    assert compound_parts("Overtime Understanding Breakfast", "de", query=True) == []
    assert compound_parts("wie lange ist die mittagspause?", "de") == []


GERMAN = (
    "Die Arbeit ist durch im Voraus feststehende Ruhepausen von mindestens dreißig Minuten zu unterbrechen. "
    "Länger als sechs Stunden hintereinander dürfen Arbeitnehmer nicht ohne Unterbrechung beschäftigt werden."
)


@pytest.mark.parametrize("rows", [lance_store.BM25F_MAX_ROWS, 0], ids=["one field", "fields apart"])
def test_bm25_finds_a_compound_by_its_parts_and_the_parts_by_a_compound(tmp_path, index_with, monkeypatch, rows):
    """Up to ``BM25F_MAX_ROWS`` chunks content and terms are one BM25F field; above, each is searched apart."""
    monkeypatch.setattr(lance_store, "BM25F_MAX_ROWS", rows)
    root = tmp_path / "de"
    write(
        root,
        "arbzg.md",
        "# Arbeitszeit\n\n## § 4 Unterbrechungen\n\n" + GERMAN + "\n\n## § 5 Nachtruhe\n\n"
        "Nach Beendigung der täglichen Arbeitszeit muss eine ununterbrochene Nachtruhe gewährt werden, die "
        "Stunden zwischen dreiundzwanzig Uhr und sechs Uhr umfasst und für alle Beschäftigten gilt.\n",
    )
    _, ix = index_with(root)
    reader = ix.reader
    assert reader.manifest.fts_language == "German"
    for query in ("Pause", "Mittagspause", "mittagspause"):  # a part finds the compound; a compound's part
        hits = reader.chunks.fts_search(query, 5, None, compound_parts(query, "de", query=True))  # another
        assert hits and "Ruhepausen" in hits[0]["text"], query
    from lance.query import MatchQuery

    assert not reader.chunks.ds.to_table(full_text_query=MatchQuery("Pause", "content")).num_rows  # no chunk
    # says "Pause": the parts found it
    r = ix.query("Wie lange ist die Mittagspause?", QueryConfig(strategy="lexical", k=1))
    assert r.passages[0].section.endswith("§ 4 Unterbrechungen")
    if not rows:  # a chunk found in both fields scores the sum: "Arbeitszeit" in § 5's words, its parts in terms
        both = reader.chunks.fts_search("Arbeitszeit", 5, None, ["arbeit", "zeit"])
        content = reader.chunks.ds.to_table(full_text_query=MatchQuery("Arbeitszeit arbeit zeit", "content"))
        scores = [h["_score"] for h in both]
        assert len(both) == 2 and scores == sorted(scores, reverse=True)
        top = dict(zip(content.column("id").to_pylist(), content.column("_score").to_pylist()))
        assert any(h["_score"] > top.get(h["id"], 0.0) + 1e-6 for h in both)


def test_english_indexes_get_no_parts(tmp_path, index_with, corpus):
    _, ix = index_with(corpus)
    assert ix.reader.chunks.compounds is None
    assert set(ix.reader.chunks.ds.to_table(columns=["terms"]).column("terms").to_pylist()) == {None}


def test_a_query_in_a_language_the_model_does_not_know_leans_on_bm25(tmp_path, index_with):
    root = tmp_path / "de"
    write(root, "a.md", "# Arbeitszeit\n\n" + GERMAN + "\n")
    _, ix = index_with(root)
    reader = ix.reader
    english = dataclasses.replace(reader.manifest.embedder, name="all-MiniLM-L6-v2")  # the bundled model: English
    reader.manifest = reader.manifest.replaced(embedder=english)
    r = ix.query("Wie lange muss die Pause sein?", QueryConfig(strategy="hybrid", k=1))
    assert r.plan.fusion["alpha"] == QueryConfig().foreign_alpha
    assert any("does not know 'de'" in n for n in r.plan.planner_notes)
    r = ix.query("How long must the break be?", QueryConfig(strategy="hybrid", k=1))
    assert r.plan.fusion["alpha"] == QueryConfig().alpha
    r = ix.query("Wie lange muss die Pause sein?", QueryConfig(strategy="hybrid", k=1, foreign_alpha=None))
    assert r.plan.fusion["alpha"] == QueryConfig().alpha
