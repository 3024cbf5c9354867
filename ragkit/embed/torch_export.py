"""The torch export of a sentence-transformers folder ragkit cannot write from its weights (an architecture other
than BERT, or weights in a pickle file): ``pip install "ragkit[torch]"``. The bundled models never come here
(ragkit/embed/export.py writes their graphs with ONNX's own tools)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from ragkit.errors import ModelUnavailable
from ragkit.extras import missing


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


def torch_export(source: Path, raw: Path, opset: int, external_vocab: int, has_rows) -> tuple[dict, bool]:
    """Trace the transformer in ``source`` into ``raw`` (last hidden state out; ``inputs_embeds`` in when its
    vocabulary has ``external_vocab`` tokens or more and ``has_rows(source)``); returns its config (as a dict) and
    whether the word embeddings stay outside."""
    try:
        quiet_offline_transformers()
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise missing("torch", f"an ONNX graph of {source} (not a BERT model with safetensors weights)") from exc
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
        # eager attention exports the pattern ONNX Runtime's optimizer fuses into one Attention operator
        model = AutoModel.from_pretrained(str(source), local_files_only=True, attn_implementation="eager").eval()
        sample = tokenizer(
            ["a first sample sentence", "a second, slightly longer sample sentence"], padding=True, return_tensors="pt"
        )
        external = model.config.vocab_size >= external_vocab and has_rows(source)
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

        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on a fixed graph, not the user's business
            torch.onnx.export(
                Hidden(model),
                tuple(sample[n] for n in names),
                str(raw),
                input_names=names,
                output_names=["last_hidden_state"],
                opset_version=opset,
                dynamo=False,
                dynamic_axes={
                    **{n: {0: "batch", 1: "tokens"} for n in names},
                    "last_hidden_state": {0: "batch", 1: "tokens"},
                },
            )
    except Exception as exc:  # an architecture the exporter refuses, a broken folder …
        raise ModelUnavailable(
            f"cannot export {source} to ONNX: {exc}",
            hint='Index with encoder = "torch" under [index] for this model.',
        ) from exc
    return model.config.to_dict(), external
