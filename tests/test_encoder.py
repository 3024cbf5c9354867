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


def test_graphs_are_written_once_per_model_without_torch(tmp_path):
    """The full-precision graph is written from the shipped weights on first use (no torch, no transformers) and
    cached; the int8 graph of the bundled MiniLM is the one ragkit ships."""
    env = {**os.environ, "RAGKIT_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    code = (
        "import sys; from ragkit.embed.onnx_encoder import OnnxEmbedder; e = OnnxEmbedder(); "
        "print(e.path); print(OnnxEmbedder(quantized=True).path); print(e.encode_query('hello').shape); "
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))"
    )
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert first.returncode == 0, first.stderr
    full, int8, shape, heavy = first.stdout.splitlines()
    assert full.startswith(str(tmp_path)) and full.endswith("model.onnx") and heavy == "[]"
    assert int8 == str(REPO / "ragkit" / "embed" / "minilm" / "model-int8r.onnx") and shape == "(384,)"
    folder = os.path.dirname(full)
    assert sorted(f for f in os.listdir(folder) if not f.startswith(".")) == [
        "export.json",
        "model-int8r.onnx",
        "model.onnx",
    ]
    assert json.loads(open(os.path.join(folder, "export.json")).read())["writer"] == "onnx.helper"
    assert first.stderr.strip() == ""  # no advice from ONNX Runtime's optimizer or quantiser
    stamp = os.path.getmtime(full)
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert again.returncode == 0 and again.stdout == first.stdout
    assert os.path.getmtime(full) == stamp  # cached: written once


def test_graphs_written_without_torch_give_the_torch_exports_vectors(tmp_path):
    """Both bundled models' graphs as ragkit writes them (ONNX's own tools, no torch) against the graphs torch
    exports from the same weights, full precision and int8: the same vectors (issue 61). The MiniLM's int8
    graph is the shipped one; its full graph comes from the shipped float16 weights."""
    from ragkit.embed import BUNDLED, MULTILINGUAL
    from ragkit.embed.export import FULL, INT8, _optimize, _quantize, _transformer_dir, word_embeddings
    from ragkit.embed.models import torch_model_dir
    from ragkit.embed.onnx_encoder import OnnxEmbedder
    from ragkit.embed.torch_export import torch_export

    for spec in (BUNDLED, MULTILINGUAL):
        source = _transformer_dir(torch_model_dir(spec))
        folder = tmp_path / spec.split(":")[1]
        folder.mkdir()
        config, _ = torch_export(source, folder / "raw.onnx", 17, 100_000, lambda s: word_embeddings(s) is not None)
        _optimize(folder / "raw.onnx", folder / FULL, config, required=False)
        _quantize(folder)
        for quantized, name in ((False, FULL), (True, INT8)):
            ours = OnnxEmbedder(spec, quantized=quantized)
            theirs = OnnxEmbedder(spec, quantized=quantized, graph=folder / name)
            assert ours.path != theirs.path
            cos = (ours.encode(TEXTS) * theirs.encode(TEXTS)).sum(axis=1)
            assert cos.min() >= 0.9999, (spec, name, cos)
            queries = (ours.encode_queries(TEXTS) * theirs.encode_queries(TEXTS)).sum(axis=1)
            assert queries.min() >= 0.9999, (spec, name, queries)


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
    for graph in (work / INT8, model / INT8):  # written here, and the one ragkit ships
        weights = [
            numpy_helper.to_array(t)
            for t in onnx.load(str(graph)).graph.initializer
            if t.data_type == onnx.TensorProto.INT8
        ]
        assert len(weights) >= 36  # six layers' attention and feed-forward matrices
        assert max(int(np.abs(w.astype(np.int16)).max()) for w in weights) <= 64


def test_a_query_process_imports_no_torch(tmp_path):
    """Index the sample with the real model, then query it in a fresh process: no torch, transformers,
    sentence-transformers or lancedb is imported on the way, and queries of the (default) int8 index are
    encoded by the int8 graph that wrote its vectors."""
    import ragkit

    ragkit.index([REPO / "ragkit" / "samples" / "handbook"], tmp_path / "idx")
    code = (
        "import sys, json\n"
        "import ragkit\n"
        f"r = ragkit.open({str(tmp_path / 'idx')!r}).query('how are overtime hours limited?')\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers', 'lancedb') if m in sys.modules)\n"
        f"reader = ragkit.open({str(tmp_path / 'idx')!r}).reader\n"
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
