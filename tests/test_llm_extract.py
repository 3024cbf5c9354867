"""--extract llm and --summaries llm with a deterministic fake generator; one real generation when installed."""

import json

import pytest

import ragkit
from ragkit.config import IndexConfig
from ragkit.errors import Cancelled
from ragkit.extract.llm import LlmStats, parse_output, rows_from_output
from ragkit.records import Chunk
from tests.conftest import write
from tests.fakes import FakeGenerator

CURIE = json.dumps(
    {
        "entities": [
            {"name": "Marie Curie", "type": "person"},
            {"name": "Sorbonne", "type": "organization"},
            {"name": "Atlantis Institute", "type": "organisation"},
        ],
        "relations": [{"source": "Marie Curie", "target": "Sorbonne", "description": "taught at"}],
    }
)


def chunk(text):
    return Chunk(
        id="c1",
        document_id="d1",
        section_id="s1",
        index=0,
        text=text,
        header="",
        token_count=10,
        line_start=1,
        line_end=1,
        boundary_confidence=1.0,
    )


def test_parse_output_takes_the_first_json_object_and_rejects_the_rest():
    assert parse_output(" " + CURIE + "\nText: more")["entities"][0]["name"] == "Marie Curie"
    assert parse_output("I think the entities are Marie Curie") is None
    assert parse_output('{"entities": "none"}') is None
    assert parse_output('{"entities": [{"name": "A"') is None  # cut off by max_tokens, nothing complete
    cut = parse_output(
        ' {"entities": [{"name": "A", "type": "x"}, {"name": "B"}], "relations": [{"source": "A", '
        '"target": "B", "description": "d"}, {"so'
    )
    assert cut["salvaged"] and [e["name"] for e in cut["entities"]] == ["A", "B"] and len(cut["relations"]) == 1


def test_rows_keep_only_names_found_in_the_chunk():
    stats = LlmStats()
    rows = rows_from_output(
        parse_output(CURIE), chunk("Marie Curie taught at the Sorbonne. She won twice."), "d1", stats
    )
    assert {m["entity"] for m in rows.mentions} == {"marie curie", "sorbonne"}
    assert stats.dropped_entities == 1  # "Atlantis Institute" is not in the text
    assert {m["type"] for m in rows.mentions} == {"person", "organisation"}
    assert (rows.mentions[0]["sent_start"], rows.mentions[0]["sent_end"]) == (0, 35)  # the first sentence
    (rel,) = rows.cooccur
    assert (rel["a"], rel["b"]) == ("marie curie", "sorbonne") and "taught at" in rel["note"]


@pytest.fixture
def docs(tmp_path):
    root = tmp_path / "docs"
    write(root, "curie.md", "# Curie\n\nMarie Curie taught at the Sorbonne in Paris.\n")
    write(root, "other.md", "# Other\n\nNothing the model can read here.\n")
    return root


def test_llm_extraction_in_a_run_counts_invalid_output(docs, tmp_path, fake):
    gen = FakeGenerator({"Marie Curie": CURIE})
    asked = []
    summary = ragkit.index(
        [docs],
        tmp_path / "idx",
        cfg=IndexConfig(extract="llm"),
        embedder_factory=lambda c: fake,
        generator_factory=lambda c: gen,
        confirm=lambda m: asked.append(m) or True,
    )
    assert asked and "2 chunk(s)" in asked[0] and "per chunk" in asked[0]
    assert summary.extract == {"chunks": 2, "invalid": 1, "salvaged": 0, "dropped_entities": 1}
    assert any("no valid JSON" in w for w in summary.warnings)
    assert len(gen.prompts) == 2  # the timed sample is not extracted twice
    ix = ragkit.open(tmp_path / "idx", embedder=fake)
    with ix.reader.duck() as store:
        assert store.knowledge.entity("Marie Curie")["relations"][0]["other"] == "sorbonne"


def test_declined_llm_extraction_writes_nothing(docs, tmp_path, fake):
    ragkit.index([docs], tmp_path / "idx", cfg=IndexConfig(), embedder_factory=lambda c: fake)
    write(docs, "new.md", "# New\n\nMarie Curie again.\n")
    with pytest.raises(Cancelled):
        ragkit.index(
            [docs],
            tmp_path / "idx",
            cfg=IndexConfig(extract="llm"),
            embedder_factory=lambda c: fake,
            generator_factory=lambda c: FakeGenerator({}),
            confirm=lambda m: False,
        )
    assert ragkit.open(tmp_path / "idx", embedder=fake).reader.manifest.counts.documents == 2


def test_llm_summaries_are_written_above_the_extractive_report(tmp_path, fake):
    root = tmp_path / "d"
    write(root, "a.md", "# Band\n\nKurt Cobain, Dave Grohl and Krist Novoselic formed Nirvana in Aberdeen.\n")

    ragkit.index(
        [root],
        tmp_path / "idx",
        cfg=IndexConfig(summaries="llm"),
        embedder_factory=lambda c: fake,
        generator_factory=lambda c: FakeGenerator(
            lambda p: " Three musicians who formed a band." if "Summary:" in p else "no"
        ),
    )
    from ragkit.store.knowledge.reports import community_reports

    with ragkit.open(tmp_path / "idx", embedder=fake).reader.duck() as store:
        rows = community_reports(store, store.rows("SELECT * FROM communities"))
    assert rows and all(r["report"].startswith("Three musicians who formed a band.\n\nCommunity: ") for r in rows)


def test_bundled_gguf_model_writes_json_and_names_not_in_the_text_are_dropped():
    """The bundled 270M model at temperature 0 (a fresh instance: a reused KV-cache prefix can change the
    output) answers the extraction prompt with valid JSON; what it invents is dropped and counted."""
    from ragkit.extract.llm import MAX_TOKENS, STOP, prompt_for
    from ragkit.generate import Generator, resolve_model

    text = "Kurt Cobain founded Nirvana in Aberdeen."
    out = Generator(resolve_model(None)).complete(prompt_for(text), max_tokens=MAX_TOKENS, stop=STOP)
    obj = parse_output(out)
    assert obj is not None and obj["entities"], out
    stats = LlmStats()
    rows = rows_from_output(obj, chunk(text), "d1", stats)
    kept = {m["entity"] for m in rows.mentions}
    assert "kurt cobain" in kept and all(m["surface"].lower() in text.lower() for m in rows.mentions)
    named = {e["name"] for e in obj["entities"]}
    assert stats.dropped_entities == sum(name.lower() not in text.lower() for name in named)
