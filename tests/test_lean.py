"""The lean index (issue 13): language-aware names, bounded relations, no model inside a transaction,
sizes in stats, the BM25 language chosen from the text, and the format bump (fake embedder)."""

import json

import pytest
from typer.testing import CliRunner

import ragkit
from ragkit.cli.app import app
from ragkit.config import IndexConfig, QueryConfig
from ragkit.extract.entities import extract
from ragkit.store.duck import DuckStore
from ragkit.store.knowledge.sql import RELATIONS_PER_ENTITY
from ragkit.store.manifest import FORMAT_VERSION
from ragkit.text import detect_language
from tests.conftest import write
from tests.fakes import FakeEmbedder, FakeGenerator

GERMAN = (
    "Der Arbeitgeber hat dem Arbeitnehmer den Urlaub nach § 7 Abs. 1 BUrlG zu gewähren. "
    "Der Betriebsrat ist nach § 87 Abs. 1 Nr. 5 BetrVG zu beteiligen; die Bundesagentur für Arbeit "
    "erhält eine Anzeige. Die Europäische Union regelt die Arbeitszeit in einer Richtlinie. "
    "Personenbezogene Daten (im Folgenden „Daten“) verarbeitet der Verantwortliche nach Art. 6 DSGVO. "
    "Die Ruhezeit nach § 5 beträgt elf Stunden."
)
NOUNS = {
    "arbeitgeber",
    "arbeitnehmer",
    "urlaub",
    "betriebsrat",
    "anzeige",
    "arbeitszeit",
    "richtlinie",
    "ruhezeit",
    "stunden",
    "verantwortliche",
    "der arbeitgeber",
    "die ruhezeit",
}


def keys(text, **kw):
    return {m.key for m in extract(text, **kw).mentions}


def test_german_nouns_are_not_entities_but_citations_and_names_are():
    found = keys(GERMAN, language="de", own_law="ArbZG")
    assert not found & NOUNS, found & NOUNS
    assert {"§ 7 burlg", "§ 87 betrvg", "art 6 dsgvo", "§ 5 arbzg"} <= found  # a bare § cites its own law
    assert {"bundesagentur für arbeit", "europäische union", "daten"} <= found
    # the same text under the English rules: every capitalised noun is a "name" (what issue 13 saw)
    assert len(keys(GERMAN, language="en") & NOUNS) >= 5


def test_german_law_names_abbreviations_and_heading_keys():
    text = (
        "Das Kündigungsschutzgesetz gilt neben dem Bürgerlichen Gesetzbuch. Näheres regelt das BetrVG. "
        "Ein Arbeitnehmer im Sinne dieses Gesetzes ist, wer abhängig beschäftigt ist."
    )
    found = keys(
        text, language="de", context=["Arbeitszeitgesetz (ArbZG)", "§ 3 Arbeitszeit der Arbeitnehmer"], own_law="ArbZG"
    )
    assert {"kündigungsschutzgesetz", "betrvg", "arbeitnehmer"} <= found  # defined: "im Sinne dieses Gesetzes"
    assert any("gesetzbuch" in k for k in found)
    assert {"arbzg", "§ 3 arbzg"} <= found  # the law and the section the chunk sits under
    assert "arbeitszeit" not in found and "gesetzes" not in found


def test_english_rules_are_kept_and_mixed_text_goes_by_language():
    english = "Scott Derrickson directed Sinister for Blumhouse Productions in Los Angeles."
    assert {"scott derrickson", "blumhouse productions", "los angeles"} <= keys(english)
    assert detect_language(GERMAN) == "de" and detect_language(english * 3) == "en"
    assert (
        detect_language(
            "Arbetsgivaren ska se till att arbetstagaren får den semester som han eller hon har "
            "rätt till enligt lagen och att det finns en plan för det."
        )
        == "sv"
    )
    assert detect_language("") == "en" and detect_language("ArbZG BetrVG 12") == "en"  # no evidence: English


@pytest.fixture
def mixed(tmp_path):
    root = tmp_path / "mixed"
    write(root, "urlaub.md", "# Bundesurlaubsgesetz (BUrlG)\n\n## § 3 Dauer des Urlaubs\n\n" + GERMAN + "\n")
    write(
        root,
        "film.md",
        "# Sinister\n\nScott Derrickson directed Sinister for Blumhouse Productions. "
        "The film was shot in Los Angeles and released by Summit Entertainment.\n",
    )
    return root


def test_a_mixed_folder_gets_each_documents_rules(mixed, index_with):
    _, ix = index_with(mixed)
    with ix.reader.duck() as store:
        lang = dict(store.con.execute("SELECT path, language FROM documents").fetchall())
        ents = {r[0] for r in store.con.execute("SELECT DISTINCT entity FROM mentions").fetchall()}
    assert {p.rsplit("/", 1)[-1]: v for p, v in lang.items()} == {"urlaub.md": "de", "film.md": "en"}
    assert {"scott derrickson", "summit entertainment", "§ 7 burlg", "bundesagentur für arbeit"} <= ents
    assert not ents & NOUNS


def test_relations_are_capped_per_entity_in_the_store(tmp_path, index_with):
    """Two hubs, each named beside 30 others; the hubs meet once, far apart in a long sentence. A pair stays
    a relation when it is among the ``RELATIONS_PER_ENTITY`` strongest of either entity: the leaves keep
    their hub, the weak hub–hub pair (strongest for neither) is dropped, and relations ≤ N × entities."""
    first = "Anna Berta Carla Dora Emil Frida Gustav Hanna Ida Jonas Karl Lena Mona Nils Olga".split()
    last = "Adams Brown Clark Dalton Evans Fisher Grant Hughes".split()
    names = [f"{f} {la}" for f in first for la in last][:60]
    text = " ".join(f"Victor Stone met {n} in Geneva." for n in names[:30])
    text += " " + " ".join(f"Maria Lopez met {n} in Lisbon." for n in names[30:])
    text += (
        " Victor Stone, who had travelled for many long weeks across the mountains and the plains, "
        "finally wrote a letter to Maria Lopez."
    )
    root = tmp_path / "hub"
    write(root, "hub.md", "# Meetings\n\n" + text + "\n")
    _, ix = index_with(root)
    with ix.reader.duck() as store:
        one = lambda sql: store.con.execute(sql).fetchone()[0]  # noqa: E731
        hub_pair = "a = 'maria lopez' AND b = 'victor stone'"
        assert one(f"SELECT count(*) FROM pairs WHERE {hub_pair}") == 1  # extraction saw the pair ...
        assert one(f"SELECT count(*) FROM relations WHERE {hub_pair}") == 0  # ... too weak for either hub
        assert one("SELECT count(*) FROM relations WHERE 'victor stone' IN (a, b)") >= 30  # no leaf loses its hub
        assert one("SELECT count(*) FROM relations") <= RELATIONS_PER_ENTITY * one("SELECT count(*) FROM entities")
        assert one("SELECT count(*) FROM relations") < one("SELECT count(*) FROM pairs")
        hub = store.knowledge.entity("Victor Stone")
    assert hub is not None and 0 < len(hub["relations"]) <= RELATIONS_PER_ENTITY


class TransactionGuard:
    """Wraps a model; any call while a DuckDB write transaction is open fails the test."""

    def __init__(self, model, calls: list):
        self._model, self._calls = model, calls

    def __getattr__(self, name):
        attr = getattr(self._model, name)
        if name not in ("encode", "encode_query", "complete", "stream", "count_tokens", "prompt_tokens"):
            return attr

        def guarded(*a, **kw):
            assert not DuckStore.IN_TRANSACTION, f"{name} called inside a transaction on {DuckStore.IN_TRANSACTION}"
            self._calls.append(name)
            return attr(*a, **kw)

        return guarded


def test_no_model_runs_inside_a_transaction(mixed, tmp_path):
    calls: list[str] = []
    emb = TransactionGuard(FakeEmbedder(), calls)
    gen = TransactionGuard(
        FakeGenerator(lambda p: " A short summary." if "Summary:" in p else '{"entities": []}'), calls
    )
    cfg = IndexConfig(summaries="llm", expand=True)
    for _ in range(2):  # a first run and an incremental one
        summary = ragkit.index(
            [mixed], tmp_path / "idx", cfg=cfg, embedder_factory=lambda c: emb, generator_factory=lambda c: gen
        )
        write(mixed, "neu.md", "# Neu\n\nDer Bundestag beschließt das Gesetz nach Art. 77 GG.\n")
    assert {"encode", "complete"} <= set(calls) and summary.written  # the guard saw the models run
    assert (tmp_path / "idx" / "cache" / "terms.npz").exists()  # expand = true: built after the commit
    with ragkit.open(tmp_path / "idx", embedder=emb).reader.duck() as store:
        assert store.con.execute("SELECT count(*) FROM communities WHERE written IS NOT NULL").fetchone()[0] > 0


def test_the_guard_catches_a_call_inside_a_transaction(tmp_path):
    emb = TransactionGuard(FakeEmbedder(), [])
    with DuckStore(tmp_path / "s.duckdb", read_only=False) as store, store.transaction():
        with pytest.raises(AssertionError, match="inside a transaction"):
            emb.encode(["x"])


def test_stats_show_bytes_per_component_and_the_ratio_to_the_source(corpus, index_with, fake):
    _, ix = index_with(corpus)
    st = ix.stats()
    assert st["source_bytes"] == sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file())
    assert st["size_ratio"] == round(st["size_bytes"] / st["source_bytes"], 2) > 0
    assert {
        "vectors",
        "full-text index",
        "chunk text and metadata (LanceDB)",
        "entities",
        "relations",
        "communities",
        "tree",
        "vocabulary",
        "graphs",
    } <= set(st["bytes"]) and all(n >= 0 for n in st["bytes"].values())
    assert sum(st["bytes"].values()) <= st["size_bytes"] * 1.05
    result = CliRunner().invoke(app, ["stats", "--index", str(ix.path), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["size_ratio"] == st["size_ratio"]
    text = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["stats", "--index", str(ix.path)]).stdout
    assert "× the source" in text and "vectors" in text


def test_bm25_language_follows_the_text_and_stays_with_the_index(tmp_path, mixed, corpus, index_with):
    root = tmp_path / "de"
    write(root, "a.md", "# Urlaub\n\n" + GERMAN + "\n")
    write(
        root,
        "b.md",
        "# Kündigung\n\nDie Kündigung des Arbeitsverhältnisses bedarf der Schriftform; "
        "die elektronische Form ist ausgeschlossen.\n",
    )
    _, ix = index_with(root, name="de")
    assert ix.reader.manifest.fts_language == "German"
    hits = ix.reader.chunks.fts_search("Kündigungen", 5, None)  # German stemming: plural finds singular
    assert hits, "German stemming found no Kündigung"
    _, ix = index_with(corpus, name="en")
    assert ix.reader.manifest.fts_language == "English"
    write(root, "c.md", "# Notes\n\nThe meeting moved to Tuesday and the agenda stays the same as before.\n")
    _, ix = index_with(root, name="de")
    assert ix.reader.manifest.fts_language == "German"  # an update keeps the index's language
    _, ix = index_with(root, name="sv", cfg=IndexConfig(fts_language="English"))
    assert ix.reader.manifest.fts_language == "English"  # as configured


def test_an_index_in_an_older_format_is_rebuilt(corpus, index_with):
    _, ix = index_with(corpus)
    manifest = ix.path / "manifest.json"
    data = json.loads(manifest.read_text())
    data["format_version"] = FORMAT_VERSION - 1
    manifest.write_text(json.dumps(data))
    with pytest.raises(Exception, match="index format"):
        ragkit.open(ix.path)
    summary, ix = index_with(corpus)
    assert summary.new == 3 and ix.reader.manifest.format_version == FORMAT_VERSION
    assert any("rebuilding" in w for w in summary.warnings)


def test_vocabulary_vectors_of_another_embedder_are_not_reused(tmp_path, index_with):
    root = tmp_path / "v"
    for i in range(4):
        write(root, f"d{i}.md", f"# Doc {i}\n\nOvertime compensation rules for shift workers, part {i}.\n")
    _, ix = index_with(root)
    assert ix.reader.term_vectors.embedded > 0
    other = FakeEmbedder(dim=32, fingerprint="other-0002")
    summary = ragkit.index([root], tmp_path / "idx", cfg=IndexConfig(), full=True, embedder_factory=lambda c: other)
    again = ragkit.open(tmp_path / "idx", embedder=other).reader.term_vectors
    assert again.embedded == len(again.terms) and again.matrix.shape[1] == 32  # all re-embedded, new dimension
    assert summary.new == 4


def test_a_configured_bm25_language_rebuilds_the_full_text_index(tmp_path, index_with):
    root = tmp_path / "de"
    write(
        root,
        "a.md",
        "# Kündigung\n\nDie Kündigung des Arbeitsverhältnisses bedarf der Schriftform; "
        "die elektronische Form ist ausgeschlossen. " + GERMAN + "\n",
    )
    _, ix = index_with(root, cfg=IndexConfig(fts_language="English"))
    assert not ix.reader.chunks.fts_search("Kündigungen", 5, None)  # English stemming: no match for the plural
    summary, ix = index_with(root, cfg=IndexConfig(fts_language="German"))  # no file changed
    assert ix.reader.manifest.fts_language == "German" and ix.reader.chunks.fts_search("Kündigungen", 5, None)
    assert summary.unchanged == 1 and summary.new == 0


def test_a_relation_quotes_the_sentence_of_its_source_chunk(tmp_path, index_with):
    """Every field of a relation's strongest co-occurrence comes from one row: the quoted sentence is in the
    source chunk, whichever document holds the strongest mention."""
    root = tmp_path / "r"
    write(root, "a.md", "# A\n\nKurt Cobain, who grew up in a small town, later played with Dave Grohl.\n")
    write(root, "b.md", "# B\n\nKurt Cobain met Dave Grohl.\n")
    _, ix = index_with(root)
    with ix.reader.duck() as store:
        rows = store.rows(
            "SELECT r.source_chunk, r.sent_start, r.sent_end, c.text FROM relations r "
            "JOIN chunks c ON c.id = r.source_chunk WHERE r.a = 'dave grohl' AND r.b = 'kurt cobain'"
        )
        (rel,) = store.knowledge.relation_rows([("dave grohl", "kurt cobain")])
    (row,) = rows
    assert rel["description"] == row["text"][row["sent_start"] : row["sent_end"]] == "Kurt Cobain met Dave Grohl."


def test_german_questions_are_routed_with_the_german_name_rules(tmp_path, index_with):
    """A German question's capitalised nouns are not names: "Arbeitgeber" (a term the law defines) does not
    send it to the entity graph, while an English question naming a known entity still goes there."""
    root = tmp_path / "laws"
    write(
        root,
        "agg.md",
        "# Gleichbehandlungsgesetz (AGG)\n\n## § 6 Persönlicher Anwendungsbereich\n\n"
        "Arbeitgeber im Sinne dieses Gesetzes sind natürliche und juristische Personen. " + GERMAN + "\n",
    )
    write(root, "film.md", "# Sinister\n\nScott Derrickson directed Sinister for Blumhouse Productions.\n")
    _, ix = index_with(root)
    assert ix.reader.entity_graph.has_entity("arbeitgeber")
    r = ix.query("Darf mein Arbeitgeber meine Daten speichern?", QueryConfig(retry=False))
    assert r.plan.language == "de" and r.plan.entities == [] and r.plan.strategy == "hybrid"
    r = ix.query("Which studio did Scott Derrickson work for?", QueryConfig(retry=False))
    assert r.plan.entities == ["scott derrickson"] and r.plan.strategy == "hippo"
    # a fresh reader routes the same from the store, not loading the entity graph for a query that needs none
    fresh = ragkit.open(ix.path, embedder=ix.reader.embedder)
    r = fresh.query("Darf mein Arbeitgeber meine Daten speichern?", QueryConfig(retry=False))
    assert r.plan.entities == [] and r.plan.strategy == "hybrid"
    assert "entity_graph" not in fresh.reader.__dict__
    names = {"scott derrickson", "sinister", "arbeitgeber", "nobody known"}
    assert fresh.reader.scopes.known_entities(names) == ["arbeitgeber", "scott derrickson", "sinister"]
    assert fresh.reader.entity_graph.has_entity("sinister")  # loaded: the graph answers, alike
    assert fresh.reader.scopes.known_entities(names) == ["arbeitgeber", "scott derrickson", "sinister"]
    r = fresh.query("Which studio did Scott Derrickson work for?", QueryConfig(retry=False))
    assert r.plan.entities == ["scott derrickson"] and r.plan.strategy == "hippo"


def test_a_query_opens_the_store_once_and_lets_it_go(mixed, index_with, monkeypatch):
    """Every read of one query shares one DuckDB connection (an attach to the process's in-memory instance),
    detached when the query ends, so an indexing run can write right after. (A reader's one-time loads of
    derived rows open an instance of their own, closed at once: not counted.)"""
    import ragkit.store.committed as reader_mod
    import ragkit.store.duck as duck
    import ragkit.store.sealed as sealed

    _, ix = index_with(mixed)
    opened = []

    class Counting(duck.DuckStore):
        def __init__(self, *a, **kw):
            opened.extend([] if kw.get("alone") else [1])
            super().__init__(*a, **kw)

    monkeypatch.setattr(reader_mod, "DuckStore", Counting)
    for strategy in ("local", "global", "light"):
        opened.clear()
        r = ix.query("Scott Derrickson Blumhouse Productions", QueryConfig(strategy=strategy))
        assert r.passages and len(opened) <= 1, (strategy, len(opened))
    base = sealed._READERS[str(ix.reader.store_path.parent.resolve())]
    attached = {row[0] for row in base.execute("SELECT database_name FROM duckdb_databases()").fetchall()}
    assert attached <= {"memory", "system", "temp"}, attached
    with DuckStore(ix.reader.store_path, read_only=False) as store:  # the file is free to write
        assert store.value("SELECT count(*) FROM documents") == 2
