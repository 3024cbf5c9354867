"""ragkit's own query encoder (ragkit/embed/tuned.py): the question side of multilingual-e5-small trained against
frozen passage vectors, so that an e5 index takes it without a rebuild; chosen per language by its card, or by
``query_encoder``. The real shipped graph and e5, small folders."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ragkit
from ragkit.config import IndexConfig, QueryConfig
from ragkit.embed import BUNDLED, tuned
from ragkit.errors import BadQuery
from tests.conftest import SAMPLES, write
from tests.test_multilingual import GERMAN

pytestmark = pytest.mark.integration

SWEDISH = {
    "semester.md": """# Semesterlag

## 4 § Semesterns längd

En arbetstagare har rätt till semesterledighet om tjugofem dagar varje semesterår.

## 5 § Sjukdom

Om arbetstagaren blir sjuk under semestern får ledigheten sparas till ett senare tillfälle.
""",
}


@pytest.fixture(scope="module")
def german(tmp_path_factory):
    root = tmp_path_factory.mktemp("qe")
    for name, text in GERMAN.items():
        write(root / "laws", name, text)
    ragkit.index([root / "laws"], root / "idx")
    return root / "idx"


def _vectors(index: Path) -> np.ndarray:
    _, _, mat = ragkit.open(index).reader.chunks.matrix()
    return np.asarray(mat)


def test_the_shipped_graph_is_small_and_its_card_says_what_it_learned_from():
    assert tuned.available(), f"{tuned.FOLDER} holds the graph and its card"
    graph = tuned.FOLDER / tuned.GRAPH
    assert graph.stat().st_size <= 30 * 2**20
    card = tuned.card()
    assert card["graph"]["bytes"] == graph.stat().st_size
    assert card["made_by"].startswith("scripts/train_query_encoder.py")
    assert card["training"]["steps"] > 0 and card["training"]["seconds"] > 0
    verdict = card["guard"]["verdict"]  # the held-out guard's, per language, with each set's figures
    assert set(verdict) == {"de", "sv"} and set(verdict["de"]["sets"]) == {"german", "xquad"}
    assert card["on_by_default"] == sorted(lang for lang, v in verdict.items() if v["default"])
    assert any("CC BY-SA 4.0" in v for v in card["licences"].values())


def test_an_e5_index_takes_ragkits_questions_without_a_rebuild(german):
    before = (german / "manifest.json").read_bytes()
    vectors = _vectors(german)
    ix = ragkit.open(german)
    reader = ix.reader
    ours = reader.query_embedder("ragkit", "de")
    theirs = reader.query_embedder("original", "de")
    assert ours is not theirs and theirs is reader.embedder
    question = "Muss ich eine Demo vorher genehmigen lassen?"
    a, b = ours.encode_query(question), theirs.encode_query(question)
    assert abs(float(np.linalg.norm(a)) - 1) < 1e-3
    assert 0.5 < float(a @ b) < 0.9999  # another encoder of the same space
    assert np.allclose(ours.encode_queries([question])[0], a, atol=1e-5)
    # the passages are the index's own: encoded alike, nothing written
    assert np.array_equal(
        ours.encode(["Alle Deutschen haben das Recht."]), theirs.encode(["Alle Deutschen haben das Recht."])
    )
    res = ix.query(question, QueryConfig(k=3, query_encoder="ragkit"))
    assert res.passages[0].section.endswith("Art 8"), [p.section for p in res.passages]
    assert (german / "manifest.json").read_bytes() == before
    assert np.array_equal(_vectors(german), vectors)


def test_auto_reads_the_card_for_the_questions_language(german):
    reader = ragkit.open(german).reader
    for language in ("de", "sv", "en"):
        chosen = reader.query_embedder("auto", language)
        assert (chosen is not reader.embedder) == tuned.on_by_default(language), language
    assert reader.query_embedder("auto", None) is reader.embedder


def test_a_minilm_index_keeps_its_own_questions_and_refuses_ragkits(tmp_path):
    ragkit.index([SAMPLES], tmp_path / "idx")
    reader = ragkit.open(tmp_path / "idx").reader
    assert reader.manifest.embedder.spec == BUNDLED
    assert reader.query_embedder("auto", "de") is reader.embedder
    with pytest.raises(BadQuery, match="multilingual-e5-small"):
        reader.query_embedder("ragkit", "en")
    with pytest.raises(BadQuery, match="unknown query encoder"):
        reader.query_embedder("mine", "en")


def test_the_cli_chooses_the_question_side_and_says_which(german, tmp_path):
    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "ragkit", "query", "--json", "--index", str(german), *args],
            capture_output=True, text=True, cwd=tmp_path,
        )  # fmt: skip

    asked = {}
    for choice in ("original", "ragkit"):
        out = run("--query-encoder", choice, "Wie viele Urlaubstage stehen mir im Jahr zu?")
        assert out.returncode == 0, out.stderr
        asked[choice] = json.loads(out.stdout)
        assert asked[choice]["passages"][0]["section"].endswith("§ 3 Dauer des Urlaubs")
    assert asked["ragkit"]["plan"]["query_encoder"] == tuned.NAME
    assert asked["original"]["plan"]["query_encoder"] == "multilingual-e5-small"
    bad = run("--query-encoder", "mine", "Urlaub?")
    assert bad.returncode != 0 and "query_encoder = 'mine' is not one of its choices" in bad.stderr
    assert "'original', 'ragkit'" in bad.stderr and "Traceback" not in bad.stderr
    (tmp_path / "ragkit.toml").write_text('[query]\nquery_encoder = "original"\n')
    assert json.loads(run("Urlaub?").stdout)["plan"]["query_encoder"] == "multilingual-e5-small"


def test_models_shows_the_question_side(german, tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "ragkit", "models", "--json", "--index", str(german)],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    roles = {r["role"]: r for r in json.loads(out.stdout)["roles"]}
    query = roles["query"]
    assert query["spec"] == f"bundled:{tuned.NAME}" and query["ready"]
    assert query["on_by_default"] == sorted(tuned.card()["on_by_default"])
    assert query["probe"]["dimension"] == 384 and query["probe"]["query_ms"] > 0


def test_a_swedish_index_answers_with_either_side(tmp_path):
    for name, text in SWEDISH.items():
        write(tmp_path / "docs", name, text)
    ragkit.index([tmp_path / "docs"], tmp_path / "idx", cfg=IndexConfig())
    ix = ragkit.open(tmp_path / "idx")
    for choice in ("original", "ragkit"):
        res = ix.query("Hur många semesterdagar får jag?", QueryConfig(k=2, query_encoder=choice))
        assert res.passages[0].section.endswith("4 § Semesterns längd"), choice
