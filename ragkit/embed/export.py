"""One-time export of a sentence-transformers model to ONNX, cached per model fingerprint and machine.

``model.onnx`` is the transformer exported from the model's own weights with torch (the pooling and the
normalisation run in numpy: ragkit/embed/onnx_encoder.py), its attention and layer norms fused by
ONNX Runtime's transformer optimizer; ``model-int8r.onnx`` is that graph with int8 weights (dynamic,
per-channel quantisation, weights in 7 bits: ``reduce_range``). Without ``reduce_range`` a CPU without AVX-512 VNNI
(AVX2 only: most laptops, and this project's CI machines since 2026-11-28) adds activation × weight pairs in 16-bit
registers that saturate, so the same index came out different, and worse, on such a CPU: hotpotqa-100's held-out
answers held the gold answer for 0.50 of questions instead of 0.56 (0.58 with 7-bit weights, which no CPU saturates:
every machine computes the same vectors). ``model-int8.onnx`` (8-bit weights, before 2026-11-28) is removed.
Both lie in ``$RAGKIT_CACHE/onnx/<fingerprint>/`` (default
``$XDG_CACHE_HOME/ragkit`` or ``~/.cache/ragkit``): exported by the first ``ragkit index`` (which has torch
loaded anyway), or by the first query that finds them missing. A file lock keeps two processes from
exporting at once; files appear by atomic rename, so a reader never sees half a model.

Measured on the bundled all-MiniLM-L6-v2 (scripts/README.md, "Query latency" and "Index cost"): the full-precision
graph gives the torch vectors (cosine ≥ 0.99999), the int8 graph cosine 0.995 on average.

A model with a vocabulary of ``EXTERNAL_VOCAB`` tokens or more (multilingual-e5-small: 250,037 × 384) is
exported without its word-embedding matrix: the graph takes ``inputs_embeds``, and the encoder looks the rows
up in the model's own ``model.safetensors``, memory-mapped (``word_embeddings``), so a process holds the
pages of the tokens it met instead of the whole matrix (384 MB in float32 inside the graph: indexing the
German laws peaked at 1.9 GB of RSS with it, scripts/README.md "Index cost").
"""

from __future__ import annotations

import json
import os
import struct
import time
import warnings
from pathlib import Path

from ragkit.cache import cache_root, folder_lock
from ragkit.errors import ModelUnavailable

FULL, INT8, OLD_INT8 = "model.onnx", "model-int8r.onnx", "model-int8.onnx"
OPSET = 17
EXTERNAL_VOCAB = 100_000  # vocabularies this large stay outside the graph (see above)
WORD_EMBEDDINGS = (
    "embeddings.word_embeddings.weight",
    "bert.embeddings.word_embeddings.weight",
    "roberta.embeddings.word_embeddings.weight",
)


def quiet_offline_transformers() -> None:
    """Before importing transformers: never reach a model hub; no progress bars or chatty logs."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import logging

    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    logging.getLogger("sentence_transformers").setLevel(logging.ERROR)


def model_cache(fingerprint: str) -> Path:
    return cache_root() / "onnx" / fingerprint


def exported(fingerprint: str, quantized: bool) -> Path | None:
    """The cached graph, or None when it has not been exported on this machine."""
    path = model_cache(fingerprint) / (INT8 if quantized else FULL)
    return path if path.is_file() else None


def ensure_exported(model_dir: Path, fingerprint: str) -> Path:
    """Export the model's ONNX graphs if this machine has not yet; returns their folder."""
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


def word_embeddings(model_dir: Path):
    """The word-embedding matrix in the model folder's ``model.safetensors``, memory-mapped (float16 or float32
    rows), or None when it is not there in a form numpy maps."""
    path = model_dir / "model.safetensors"
    if not path.is_file():
        return None
    import numpy as np

    with path.open("rb") as fh:
        (size,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(size))
    entry = next((header[k] for k in WORD_EMBEDDINGS if k in header), None)
    if entry is None or entry["dtype"] not in ("F16", "F32"):
        return None
    start, end = entry["data_offsets"]
    dtype = np.float16 if entry["dtype"] == "F16" else np.float32
    rows = np.memmap(path, dtype=dtype, mode="r", offset=8 + size + start, shape=tuple(entry["shape"]))
    return rows if rows.nbytes == end - start else None


def _export(model_dir: Path, folder: Path) -> None:
    t = time.perf_counter()
    try:
        quiet_offline_transformers()
        import torch
        from transformers import AutoModel, AutoTokenizer

        source = _transformer_dir(model_dir)
        tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
        # eager attention exports the pattern ONNX Runtime's optimizer fuses into one Attention operator
        model = AutoModel.from_pretrained(str(source), local_files_only=True, attn_implementation="eager").eval()
        sample = tokenizer(
            ["a first sample sentence", "a second, slightly longer sample sentence"], padding=True, return_tensors="pt"
        )
        external = model.config.vocab_size >= EXTERNAL_VOCAB and word_embeddings(source) is not None
        if external:  # the graph starts after the word-embedding lookup
            sample["inputs_embeds"] = model.get_input_embeddings()(sample["input_ids"]).detach()
        names = [
            n for n in ("inputs_embeds" if external else "input_ids", "attention_mask", "token_type_ids") if n in sample
        ]

        class Hidden(torch.nn.Module):  # positional inputs in a fixed order, the last hidden state out
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, *inputs):
                return self.inner(**dict(zip(names, inputs))).last_hidden_state

        raw = folder / "raw.onnx.part"
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on a fixed graph, not the user's business
            torch.onnx.export(
                Hidden(model),
                tuple(sample[n] for n in names),
                str(raw),
                input_names=names,
                output_names=["last_hidden_state"],
                opset_version=OPSET,
                dynamo=False,
                dynamic_axes={
                    **{n: {0: "batch", 1: "tokens"} for n in names},
                    "last_hidden_state": {0: "batch", 1: "tokens"},
                },
            )
    except Exception as exc:  # torch, transformers or onnx missing, an architecture the exporter refuses …
        raise ModelUnavailable(
            f"cannot export {model_dir} to ONNX: {exc}",
            hint='Index with encoder = "torch" under [index] for this model.',
        ) from exc
    _optimize(raw, folder / (FULL + ".part"), model.config)
    raw.unlink(missing_ok=True)
    (folder / (FULL + ".part")).rename(folder / FULL)
    (folder / "export.json").write_text(
        json.dumps(
            {
                "source": str(model_dir),
                "opset": OPSET,
                "inputs_embeds": external,
                "seconds": round(time.perf_counter() - t, 2),
            }
        )
    )


def _optimize(raw: Path, out: Path, config) -> None:
    """Fuse attention and layer norms (BERT-like models); any other graph is kept as exported."""
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        opt = optimize_model(
            str(raw), model_type="bert", num_heads=int(config.num_attention_heads), hidden_size=int(config.hidden_size)
        )
        opt.save_model_to_file(str(out))
    except Exception:  # not a BERT-like graph: unfused is slower, not wrong
        raw.replace(out)


def _quantize(folder: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    part = folder / (INT8 + ".part")
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
