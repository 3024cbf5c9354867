"""The ONNX encoder (issue 14) against the torch one, its export cache, and a query process without torch."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ragkit.embed import load_embedder
from tests.quality import REPO

pytestmark = pytest.mark.integration

TEXTS = [
    "How are overtime hours limited?",
    "Wie lange muss meine Mittagspause mindestens sein, wenn ich acht Stunden am Tag arbeite?",
    "Hur många dagars semester har en arbetstagare rätt till enligt semesterlagen?",
    "Working Time Policy > Overtime\nOvertime must be approved in advance and is limited to 10 hours per week.",
    "x",
    "The quick brown fox jumps over the lazy dog. " * 60,  # longer than the model's 256 tokens: truncated
]


@pytest.fixture(scope="module")
def encoders():
    return load_embedder(encoder="torch"), load_embedder(encoder="onnx"), load_embedder(encoder="onnx-int8")


def test_onnx_gives_the_torch_vectors(encoders):
    torch_enc, onnx_enc, int8_enc = encoders
    ref = torch_enc.encode(TEXTS)
    full = onnx_enc.encode(TEXTS)
    assert (full * ref).sum(axis=1).min() >= 0.999
    queries = np.array([onnx_enc.encode_query(t) for t in TEXTS])
    assert (queries * ref).sum(axis=1).min() >= 0.999
    assert np.allclose(onnx_enc.encode_queries(TEXTS), queries, atol=1e-5)  # padded batch = one by one
    cos8 = (int8_enc.encode(TEXTS) * ref).sum(axis=1)
    assert cos8.min() >= 0.97 and cos8.mean() >= 0.985, cos8  # int8 weights: close, not equal
    assert onnx_enc.fingerprint == torch_enc.fingerprint == int8_enc.fingerprint
    assert onnx_enc.dimension == torch_enc.dimension == 384 and onnx_enc.max_tokens == torch_enc.max_tokens


def test_token_counts_match_the_torch_tokenizer(encoders):
    torch_enc, onnx_enc, _ = encoders
    assert onnx_enc.count_tokens(TEXTS) == torch_enc.count_tokens(TEXTS)
    assert onnx_enc.count_tokens(TEXTS)[-1] > 256  # counting never truncates (chunk budgets need the length)


def test_export_is_cached_per_model_and_done_once(tmp_path):
    env = {**os.environ, "RAGKIT_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    code = (
        "from ragkit.embed.onnx_encoder import OnnxEmbedder; e = OnnxEmbedder(quantized=True); "
        "print(e.path); print(e.encode_query('hello').shape)"
    )
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert first.returncode == 0, first.stderr
    path = first.stdout.splitlines()[0]
    assert path.startswith(str(tmp_path)) and path.endswith("model-int8r.onnx")
    folder = os.path.dirname(path)
    assert sorted(f for f in os.listdir(folder) if not f.startswith(".")) == [
        "export.json",
        "model-int8r.onnx",
        "model.onnx",
    ]
    stamp = os.path.getmtime(os.path.join(folder, "model.onnx"))
    again = subprocess.run(
        [sys.executable, "-c", code + "; import sys; print('torch' in sys.modules)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    assert again.returncode == 0 and again.stdout.split()[-1] == "False"  # cached: no torch, no export
    assert os.path.getmtime(os.path.join(folder, "model.onnx")) == stamp


def test_int8_weights_fit_in_seven_bits_so_no_cpu_saturates(tmp_path):
    """The int8 graph's weights lie in [-64, 63] (``reduce_range``): an AVX2 CPU without VNNI adds pairs of
    uint8 activations × int8 weights in 16-bit registers, which 8-bit weights overflow, so one index differed
    (and lost answers: hotpotqa 0.50 instead of 0.58) between machines. An 8-bit graph cached by an older
    ragkit is replaced."""
    import onnx
    from onnx import numpy_helper

    from ragkit.embed.export import FULL, INT8, OLD_INT8, _quantize, ensure_exported
    from ragkit.embed.models import BUNDLED, fingerprint, resolve_model_dir

    model = resolve_model_dir(BUNDLED)
    folder = ensure_exported(model, fingerprint(model))
    work = tmp_path / "cache"
    work.mkdir()
    (work / FULL).symlink_to(folder / FULL)
    (work / OLD_INT8).write_bytes(b"an 8-bit graph of an older ragkit")
    _quantize(work)
    assert not (work / OLD_INT8).exists()
    weights = [
        numpy_helper.to_array(t)
        for t in onnx.load(str(work / INT8)).graph.initializer
        if t.data_type == onnx.TensorProto.INT8
    ]
    assert len(weights) >= 36  # six layers' attention and feed-forward matrices
    assert max(int(np.abs(w.astype(np.int16)).max()) for w in weights) <= 64


def test_a_query_process_imports_no_torch(tmp_path):
    """Index the sample with the real model, then query it in a fresh process: no torch, transformers,
    sentence-transformers or lancedb is imported on the way, and queries of the (default) int8 index are
    encoded by the int8 graph that wrote its vectors."""
    from ragkit import api

    api.index([REPO / "ragkit" / "samples" / "handbook"], tmp_path / "idx")
    code = (
        "import sys, json\n"
        "from ragkit import api\n"
        f"r = api.query(api.open_index({str(tmp_path / 'idx')!r}), 'how are overtime hours limited?')\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers', 'lancedb') if m in sys.modules)\n"
        f"reader = api.open_index({str(tmp_path / 'idx')!r})\n"
        "row = reader.chunks.take([0])[0]\n"  # the query encoder is the one that wrote the chunk vectors
        "cos = float(reader.embedder.encode_query(row['content']) @ row['vector'])\n"
        "print(json.dumps({'heavy': heavy, 'top': r.passages[0].section, 'encoder': reader.embedder.encoder,\n"
        "                  'same': cos > 0.9999}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {
        "heavy": [],
        "top": "Working Time Policy > Overtime > Limits on overtime",
        "encoder": "onnx-int8",
        "same": True,
    }
