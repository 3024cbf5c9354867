"""The ONNX graphs of an embedding model, written once per model fingerprint and machine, without torch.

``model.onnx`` is the transformer written from the model's own weights (``model.safetensors``, or the bundled
MiniLM's two files) with ONNX's own tools (ragkit/embed/onnx_graph.py: the graph a torch export of BERT traces,
operator for operator), its attention and layer norms fused by ONNX Runtime's transformer optimizer;
``model-int8r.onnx`` is that graph with int8 weights (dynamic, per-channel quantisation, weights in 7 bits:
``reduce_range``). The pooling and the normalisation run in numpy (ragkit/embed/onnx_encoder.py). Graphs written so
give the vectors the torch export gave, to the last bit on the bundled models (tests/test_encoder.py). A folder of
another architecture, or with its weights only in a pickle, is exported by torch (ragkit/embed/torch_export.py,
the ``torch`` extra).

Without ``reduce_range`` a CPU without AVX-512 VNNI (AVX2 only: most laptops, and this project's CI machines since
2026-11-28) adds activation × weight pairs in 16-bit registers that saturate, so the same index came out
different, and worse, on such a CPU: hotpotqa-100's held-out answers held the gold answer for 0.50 of questions
instead of 0.56 (0.58 with 7-bit weights, which no CPU saturates: every machine computes the same vectors).
``model-int8.onnx`` (8-bit weights, before 2026-11-28) is removed.

Both lie in ``$RAGKIT_CACHE/onnx/<fingerprint>/`` (default ``$XDG_CACHE_HOME/ragkit`` or ``~/.cache/ragkit``),
written by the first ``ragkit index`` or query that finds them missing; a model folder that ships its int8 graph
(the bundled MiniLM: ragkit/embed/minilm/) is read from there. A file lock keeps two processes from writing at
once; files appear by atomic rename, so a reader never sees half a model.

A model with a vocabulary of ``EXTERNAL_VOCAB`` tokens or more (multilingual-e5-small: 126,489 × 384 after its
cut) keeps its word-embedding matrix outside the graph: the graph takes ``inputs_embeds``, and the encoder looks
the rows up in the model's own ``model.safetensors``, memory-mapped (``word_embeddings``), so a process holds the
pages of the tokens it met instead of the whole matrix (indexing the German laws peaked at 1.9 GB of RSS with it
inside, scripts/README.md "Index cost").
"""

from __future__ import annotations

import json
import logging
import struct
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

from ragkit.cache import cache_root, folder_lock
from ragkit.embed.onnx_graph import bert_graph
from ragkit.embed.torch_export import torch_export
from ragkit.errors import ModelUnavailable

FULL, INT8, OLD_INT8 = "model.onnx", "model-int8r.onnx", "model-int8.onnx"
OPSET = 17
EXTERNAL_VOCAB = 100_000  # vocabularies this large stay outside the graph (see above)
WORD_EMBEDDINGS = (
    "embeddings.word_embeddings.weight",
    "bert.embeddings.word_embeddings.weight",
    "roberta.embeddings.word_embeddings.weight",
)


def model_cache(fingerprint: str) -> Path:
    return cache_root() / "onnx" / fingerprint


def exported(fingerprint: str, quantized: bool) -> Path | None:
    """The cached graph, or None when it has not been written on this machine."""
    path = model_cache(fingerprint) / (INT8 if quantized else FULL)
    return path if path.is_file() else None


def graph_path(model_dir: Path, fingerprint: str, quantized: bool) -> Path:
    """The model's graph (int8 or full precision): shipped in its folder, cached, or written now."""
    shipped = _transformer_dir(model_dir) / INT8
    if quantized and shipped.is_file():
        return shipped
    return exported(fingerprint, quantized) or ensure_exported(model_dir, fingerprint) / (INT8 if quantized else FULL)


def ensure_exported(model_dir: Path, fingerprint: str) -> Path:
    """Write the model's ONNX graphs if this machine has not yet; returns their folder."""
    folder = model_cache(fingerprint)
    if (folder / FULL).is_file() and (folder / INT8).is_file():
        return folder
    with folder_lock(folder):
        if not (folder / FULL).is_file():
            _export(model_dir, folder)
        if not (folder / INT8).is_file():
            _quantize(folder)
    return folder


def _transformer_dir(model_dir: Path) -> Path:
    """The folder of the sentence-transformers model's Transformer module (the model folder itself, usually)."""
    modules = model_dir / "modules.json"
    if modules.is_file():
        for m in json.loads(modules.read_text()):
            if m.get("type", "").endswith("Transformer"):
                return model_dir / m.get("path", "")
    return model_dir


def _header(path: Path) -> tuple[int, dict]:
    with path.open("rb") as fh:
        (size,) = struct.unpack("<Q", fh.read(8))
        return size, json.loads(fh.read(size))


def word_embeddings(model_dir: Path):
    """The word-embedding matrix in the model folder's ``model.safetensors``, memory-mapped (float16 or float32
    rows), or None when it is not there in a form numpy maps."""
    path = model_dir / "model.safetensors"
    if not path.is_file():
        return None
    import numpy as np

    size, header = _header(path)
    entry = next((header[k] for k in WORD_EMBEDDINGS if k in header), None)
    if entry is None or entry["dtype"] not in ("F16", "F32"):
        return None
    start, end = entry["data_offsets"]
    dtype = np.float16 if entry["dtype"] == "F16" else np.float32
    rows = np.memmap(path, dtype=dtype, mode="r", offset=8 + size + start, shape=tuple(entry["shape"]))
    return rows if rows.nbytes == end - start else None


def _weights(source: Path) -> dict | None:
    """Every tensor of the folder's ``*.safetensors`` files (numpy), or None when it has none."""
    files = sorted(source.glob("*.safetensors"))
    if not files:
        return None
    from safetensors.numpy import load_file

    out: dict = {}
    for path in files:
        out.update(load_file(str(path)))
    return out


@contextmanager
def _quiet_tools():
    """ONNX Runtime's optimizer and quantiser log advice (a pre-processing step, a producer name) through the
    root logger: not the user's business."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def _export(model_dir: Path, folder: Path) -> None:
    t = time.perf_counter()
    source = _transformer_dir(model_dir)
    config_file = source / "config.json"
    config = json.loads(config_file.read_text()) if config_file.is_file() else {}
    weights = _weights(source) if config.get("model_type") == "bert" else None
    raw = folder / "raw.onnx.part"
    if weights is not None:
        import onnx

        external = int(config.get("vocab_size", 0)) >= EXTERNAL_VOCAB and word_embeddings(source) is not None
        try:
            onnx.save(bert_graph(weights, config, external=external), str(raw))
        except (KeyError, ValueError) as exc:
            raise ModelUnavailable(f"cannot write the ONNX graph of {model_dir}: {exc}") from exc
        writer = "onnx.helper"
    else:
        config, external = torch_export(source, raw, OPSET, EXTERNAL_VOCAB, lambda s: word_embeddings(s) is not None)
        writer = "torch"
    _optimize(raw, folder / (FULL + ".part"), config, required=writer != "torch")
    raw.unlink(missing_ok=True)
    (folder / (FULL + ".part")).rename(folder / FULL)
    (folder / "export.json").write_text(
        json.dumps(
            {
                "source": str(model_dir),
                "writer": writer,
                "opset": OPSET,
                "inputs_embeds": external,
                "seconds": round(time.perf_counter() - t, 2),
            }
        )
    )


def _optimize(raw: Path, out: Path, config: dict, required: bool = True) -> None:
    """Fuse attention and layer norms (BERT-like models). A graph ragkit wrote must fuse (its int8 form is
    quantised from the fused one: the same weights on every machine); another one is kept as exported, slower,
    not wrong.

    What ONNX Runtime's ``optimize_model`` does for BERT, in its two steps: ONNX Runtime's basic graph
    optimisations (constant folding, cast elimination; its constant sharing off), then its fusions in Python.
    The first step is run here because ``optimize_model`` imports torch for it (onnxruntime 1.32), which a
    lean install does not have."""
    try:
        import onnxruntime as ort
        from onnxruntime.transformers.optimizer import optimize_model

        basic = raw.with_name(raw.name + ".basic.onnx")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(basic)
        options.log_severity_level = 3
        with _quiet_tools():
            ort.InferenceSession(str(raw), options, providers=["CPUExecutionProvider"],
                                 disabled_optimizers=["ConstantSharing"])  # fmt: skip
            opt = optimize_model(
                str(basic),
                model_type="bert",
                num_heads=int(config["num_attention_heads"]),
                hidden_size=int(config["hidden_size"]),
                opt_level=0,
            )
            basic.unlink(missing_ok=True)
            fused = opt.get_fused_operator_statistics()
            if required and not fused.get("Attention"):
                raise RuntimeError(f"the attention did not fuse ({fused})")
            opt.save_model_to_file(str(out))
    except Exception as exc:
        if required:
            raise ModelUnavailable(
                f"ONNX Runtime's optimizer failed on {raw.parent}: {type(exc).__name__}: {exc}",
                hint="pip install --force-reinstall onnxruntime onnx sympy",
            ) from exc
        raw.replace(out)


def _quantize(folder: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    part = folder / (INT8 + ".part")
    with _quiet_tools():
        quantize_dynamic(
            str(folder / FULL),
            str(part),
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,  # 7-bit weights: the same vectors on AVX2 and on AVX-512 VNNI (see above)
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    part.rename(folder / INT8)
    (folder / OLD_INT8).unlink(missing_ok=True)
