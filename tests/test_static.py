"""Static embedders distilled from a bundled model (ragkit/embed/static.py): the real MiniLM's ONNX graph, its
vocabulary cut to its first LIMIT tokens so that a distillation takes seconds (its words in frequency order: the
common English words are all there); the static folders in a temporary cache beside the real ONNX export."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ragkit
from ragkit.cache import cache_root
from ragkit.config import IndexConfig, QueryConfig
from ragkit.embed import (
    BUNDLED,
    StaticEmbedder,
    bundled_model_dir,
    load_embedder,
    model_alpha,
    model_languages,
)
from ragkit.embed import static as st
from ragkit.embed.onnx_encoder import OnnxEmbedder
from ragkit.errors import BadInput, EmbedderMismatch
from ragkit.modelspec import parse_spec
from tests.conftest import SAMPLES
from tests.quality import REPO

SPEC = "bundled:all-MiniLM-L6-v2-static"
LIMIT = 5000  # tokens distilled (of 30,522; words from id 1996 on, commonest first): seconds
DIMS = 128


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A cache of its own for the static folders, sharing the machine's ONNX exports and converted models."""
    real, root = cache_root(), tmp_path_factory.mktemp("cache")
    for sub in ("onnx", "models"):
        (real / sub).mkdir(parents=True, exist_ok=True)
        (root / sub).symlink_to(real / sub)
    patch = pytest.MonkeyPatch()
    patch.setenv("RAGKIT_CACHE", str(root))
    yield root
    patch.undo()


@pytest.fixture(scope="module")
def emb(cache):
    return StaticEmbedder(SPEC, dims=DIMS, limit=LIMIT)


def test_static_specs_name_their_base_model():
    assert st.base_of(SPEC) == BUNDLED
    assert st.base_of("bundled:multilingual-e5-small-static") == "bundled:multilingual-e5-small"
    assert st.base_of(BUNDLED) is None and st.base_of("bundled:nothing-static") is None
    spec = parse_spec("static:bundled:all-MiniLM-L6-v2")
    assert (spec.kind, spec.name) == ("static", BUNDLED) and st.base_of(spec.raw) == BUNDLED
    assert parse_spec("static:models/mini").name == str(Path("models/mini").resolve())
    with pytest.raises(BadInput):
        parse_spec("static:model.gguf")
    with pytest.raises(BadInput):
        load_embedder(BUNDLED, encoder="static")
    # a static embedder knows its base model's languages; the base model's dense weight is its own
    assert model_languages("all-MiniLM-L6-v2-static256") == model_languages("all-MiniLM-L6-v2") == {"en"}
    assert model_languages("multilingual-e5-small-static256") is None
    assert model_alpha("multilingual-e5-small-static256", "de") is None


@pytest.mark.integration
def test_vectors_are_unit_length_and_deterministic(emb):
    texts = ["The dog barks at the cat.", "Overtime is limited to ten hours a week.", "", "ℵℶ", "x " * 500]
    v = emb.encode(texts)
    assert v.shape == (5, DIMS) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)  # an empty or unknown text too
    assert np.array_equal(v, emb.encode(texts))
    one_by_one = np.array([emb.encode([t])[0] for t in texts])
    assert np.allclose(v, one_by_one, atol=1e-6)  # a text's vector does not depend on its batch
    assert np.allclose(emb.encode_queries(texts[:2])[1], emb.encode_query(texts[1]), atol=1e-6)
    big = emb.encode(texts * 200)  # several steps of TEXTS_PER_STEP
    assert np.allclose(big[-5:], v, atol=1e-6)


@pytest.mark.integration
def test_texts_sharing_words_are_closer_than_unrelated_ones(emb):
    a, b, c = emb.encode(
        [
            "The army attacked the city during the war.",
            "Soldiers of the army fought in the war.",
            "She cooked rice and fish for dinner.",
        ]
    )
    assert a @ b > a @ c + 0.2 and a @ b > b @ c + 0.2
    q = emb.encode_query("who fought in the war?")
    assert q @ b > q @ c


@pytest.mark.integration
def test_a_token_row_is_the_base_models_vector_of_the_token(cache):
    base = OnnxEmbedder(BUNDLED)
    ids = np.array([base._tokenizer.token_to_id(w) for w in ("dog", "overtime", "river")])
    assert np.allclose(st.token_vectors(base, ids), base.encode(["dog", "overtime", "river"]), atol=1e-4)


@pytest.mark.integration
def test_its_identity_differs_from_the_base_models_and_its_tokens_do_not(emb):
    base = load_embedder(BUNDLED, encoder="onnx")
    assert emb.name == f"all-MiniLM-L6-v2-static{DIMS}" != base.name
    assert emb.fingerprint != base.fingerprint and emb.encoder == "static"
    assert emb.fingerprint != st.static_fingerprint(base.fingerprint, DIMS, not st.PROMPTED, LIMIT)
    assert emb.fingerprint != st.static_fingerprint(base.fingerprint, DIMS + 1, st.PROMPTED, LIMIT)
    texts = ["Overtime must be approved in advance.", "", "The quick brown fox " * 100]
    assert emb.count_tokens(texts) == base.count_tokens(texts) and emb.max_tokens == base.max_tokens
    # static:FOLDER: the same model in a folder is the same static embedder (its table distilled once)
    folder = StaticEmbedder(f"static:{bundled_model_dir()}", dims=DIMS, limit=LIMIT)
    assert folder.folder == emb.folder and folder.fingerprint == emb.fingerprint
    assert folder.name == f"{bundled_model_dir().name}-static{DIMS}"


@pytest.mark.integration
def test_the_distilled_folder_is_reused_without_the_base_model(emb, cache):
    meta, stamp = json.loads((emb.folder / "meta.json").read_text()), (emb.folder / "vectors.npy").stat().st_mtime_ns
    assert emb.folder.parent == cache / "static" and meta["distilled"] == LIMIT and meta["weights"] == "zipf"
    assert st.distill(BUNDLED, DIMS, LIMIT) == emb.folder
    assert (emb.folder / "vectors.npy").stat().st_mtime_ns == stamp
    code = (
        "import sys; from ragkit.embed.static import StaticEmbedder\n"
        f"e = StaticEmbedder({SPEC!r}, dims={DIMS}, limit={LIMIT}); e.encode(['hello world'])\n"
        "print('onnxruntime' in sys.modules)"
    )
    env = {**os.environ, "RAGKIT_CACHE": str(cache)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert out.returncode == 0 and out.stdout.split() == ["False"], out.stderr  # no ONNX Runtime: no distillation
    assert (emb.folder / "vectors.npy").stat().st_mtime_ns == stamp


@pytest.mark.integration
@pytest.mark.parametrize("damage", ["truncated vectors", "garbled meta", "older method"])
def test_a_damaged_folder_is_distilled_again(cache, damage):
    folder = st.distill(BUNDLED, 32, 400)
    good = np.load(folder / "vectors.npy")
    if damage == "truncated vectors":
        (folder / "vectors.npy").write_bytes((folder / "vectors.npy").read_bytes()[:5000])
    elif damage == "garbled meta":
        (folder / "meta.json").write_text("{not json")
    else:
        meta = json.loads((folder / "meta.json").read_text())
        (folder / "meta.json").write_text(json.dumps({**meta, "method": st.METHOD - 1}))
    assert st.distill(BUNDLED, 32, 400) == folder
    assert np.allclose(np.load(folder / "vectors.npy"), good, atol=1e-3)  # (one ONNX run to the next)
    assert not list(folder.parent.glob("*.part"))


@pytest.mark.integration
def test_an_index_of_static_vectors_refuses_the_base_model_and_vice_versa(emb, tmp_path):
    idx = tmp_path / "idx"
    ragkit.index([SAMPLES], idx, cfg=IndexConfig(embed_model=SPEC), embedder_factory=lambda cfg: emb)
    manifest = json.loads((idx / "manifest.json").read_text())
    assert manifest["embedder"]["name"] == emb.name and manifest["embedder"]["encoder"] == "static"
    res = ragkit.open(idx, embedder=emb).query("how are overtime hours limited?", QueryConfig(k=3))
    assert any("Overtime" in p.section for p in res.passages), [p.section for p in res.passages]
    base = load_embedder(BUNDLED, encoder="onnx-int8")
    with pytest.raises(EmbedderMismatch):
        ragkit.open(idx, embedder=base)
    with pytest.raises(EmbedderMismatch):
        ragkit.open(idx, embed_model=BUNDLED)
    with pytest.raises(EmbedderMismatch):
        ragkit.index([SAMPLES], idx, cfg=IndexConfig(embed_model=BUNDLED))
    ragkit.index([SAMPLES], tmp_path / "base", cfg=IndexConfig(embed_model=BUNDLED))
    with pytest.raises(EmbedderMismatch):
        ragkit.open(tmp_path / "base", embedder=emb)


@pytest.mark.integration
def test_ragkit_index_takes_a_static_model_spec(tmp_path):
    """End to end through the CLI, with the real cache: the whole MiniLM vocabulary is distilled once per machine
    (about 45 s on two busy cores), like the ONNX export."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    idx = tmp_path / "idx"
    run = [sys.executable, "-m", "ragkit"]
    made = subprocess.run(
        [*run, "index", str(SAMPLES), "--index", str(idx), "--embed-model", SPEC],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
    )
    assert made.returncode == 0, made.stderr
    assert json.loads((idx / "manifest.json").read_text())["embedder"]["name"] == f"all-MiniLM-L6-v2-static{st.DIMS}"
    asked = subprocess.run(
        [*run, "query", "--json", "-k", "3", "--index", str(idx), "how are overtime hours limited?"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert asked.returncode == 0, asked.stderr
    assert "Overtime" in json.loads(asked.stdout)["passages"][0]["section"]
