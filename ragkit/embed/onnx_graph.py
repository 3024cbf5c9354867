"""A BERT encoder's ONNX graph written from its weights with ONNX's own tools (``onnx.helper``), no torch.

The graph is the one a torch export of a transformers ``BertModel`` traces (eager attention), operator for
operator, so that ONNX Runtime's transformer optimizer fuses it the same way and the int8 graph quantised from it
holds the same weights (ragkit/embed/export.py):

    embeddings = LayerNorm(words[input_ids] + positions[0..T) + types[token_type_ids])
    mask       = (1 - attention_mask[:, None, None, :]) × float32's lowest
    each layer:  x = LayerNorm(x + Dense(softmax(Q Kᵀ / √d + mask) V))     (heads of d = hidden / heads)
                 x = LayerNorm(x + Dense(gelu(Dense(x))))                   (gelu with erf, as BERT's "gelu")

out comes ``last_hidden_state``; pooling and normalisation stay in numpy (ragkit/embed/onnx_encoder.py). A
vocabulary kept outside the graph (``external=True``) makes its first input ``inputs_embeds``, the rows looked up
by the encoder. The weights are a BERT checkpoint's tensors by their transformers names (``embeddings.…``,
``encoder.layer.N.…``, with or without a ``bert.`` prefix), as numpy arrays of float16 or float32.
"""

from __future__ import annotations

import math

import numpy as np

OPSET = 17
PREFIXES = ("", "bert.", "model.", "roberta.")


class _Builder:
    """Nodes and initializers of one graph, each value named once."""

    def __init__(self):
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes, self.inits, self._count = [], [], 0

    def name(self, stem: str) -> str:
        self._count += 1
        return f"{stem}_{self._count}"

    def const(self, stem: str, value) -> str:
        name = self.name(stem)
        self.inits.append(self.numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, kind: str, inputs: list[str], stem: str | None = None, **attrs) -> str:
        out = self.name(stem or kind)
        self.nodes.append(self.helper.make_node(kind, inputs, [out], name=out, **attrs))
        return out


def _tensors(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The checkpoint's tensors by their names inside ``BertModel`` (any known prefix taken off), as float32."""
    out = {}
    for key, value in weights.items():
        for prefix in sorted(PREFIXES, key=len, reverse=True):
            if prefix and key.startswith(prefix):
                key = key[len(prefix) :]
                break
        out[key] = np.asarray(value, dtype=np.float32)
    return out


def bert_graph(weights: dict[str, np.ndarray], config: dict, external: bool = False):
    """The ONNX model of the BERT encoder with ``weights`` and the transformers ``config`` (a dict: hidden_size,
    num_hidden_layers, num_attention_heads, layer_norm_eps); ``external``: the word embeddings stay outside and
    the graph starts from ``inputs_embeds``."""
    from onnx import TensorProto, helper

    w = _tensors(weights)
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    layers, eps = int(config["num_hidden_layers"]), float(config.get("layer_norm_eps", 1e-12))
    if config.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"unsupported activation {config.get('hidden_act')!r} (BERT's erf gelu only)")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"unsupported position embeddings {config.get('position_embedding_type')!r}")
    head = hidden // heads
    b = _Builder()

    def linear(x: str, name: str) -> str:  # x Wᵀ + bias, as torch traces a Linear (MatMul, then Add)
        product = b.op("MatMul", [x, b.const(f"{name}.weight_T", w[f"{name}.weight"].T.copy())])
        return b.op("Add", [b.const(f"{name}.bias", w[f"{name}.bias"]), product])

    def norm(x: str, name: str) -> str:
        return b.op(
            "LayerNormalization",
            [x, b.const(f"{name}.weight", w[f"{name}.weight"]), b.const(f"{name}.bias", w[f"{name}.bias"])],
            axis=-1,
            epsilon=eps,
        )

    first = "inputs_embeds" if external else "input_ids"
    inputs = [
        helper.make_tensor_value_info(first, TensorProto.FLOAT, ["batch", "tokens", hidden])
        if external
        else helper.make_tensor_value_info(first, TensorProto.INT64, ["batch", "tokens"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "tokens"]),
    ]
    # embeddings: words (or the given rows) + types + positions 0..T-1, then LayerNorm
    words = first if external else b.op("Gather", [b.const("word_embeddings", w["embeddings.word_embeddings.weight"]), first], axis=0)  # fmt: skip
    types = b.op("Gather", [b.const("token_type_embeddings", w["embeddings.token_type_embeddings.weight"]), "token_type_ids"], axis=0)  # fmt: skip
    # positions as BERT's buffer of position ids [1, max] sliced to the text's length (the pattern ONNX Runtime
    # fuses into EmbedLayerNormalization)
    table = w["embeddings.position_embeddings.weight"]
    tokens = b.op("Gather", [b.op("Shape", [first]), b.const("one", np.array(1, dtype=np.int64))], axis=0)
    end = b.op("Unsqueeze", [tokens, b.const("axes", np.array([0], dtype=np.int64))])
    ids = b.const("position_ids", np.arange(table.shape[0], dtype=np.int64)[None, :])
    zero, one = b.const("starts", np.array([0], dtype=np.int64)), b.const("steps", np.array([1], dtype=np.int64))
    positions = b.op("Slice", [ids, zero, end, b.const("axes", np.array([1], dtype=np.int64)), one])
    where = b.op("Gather", [b.const("position_embeddings", table), positions], axis=0)
    x = b.op("Add", [b.op("Add", [words, types]), where])
    x = norm(x, "embeddings.LayerNorm")
    # the additive mask: 0 where a token is, float32's lowest where padding is
    mask = b.op("Unsqueeze", ["attention_mask", b.const("axes", np.array([1], dtype=np.int64))])
    mask = b.op("Unsqueeze", [mask, b.const("axes", np.array([2], dtype=np.int64))])
    mask = b.op("Cast", [mask], to=TensorProto.FLOAT)
    mask = b.op("Sub", [b.const("one_f", np.array(1.0, dtype=np.float32)), mask])
    mask = b.op("Mul", [mask, b.const("lowest", np.array(np.finfo(np.float32).min, dtype=np.float32))])
    split = b.const("heads_shape", np.array([0, 0, heads, head], dtype=np.int64))
    merged = b.const("hidden_shape", np.array([0, 0, hidden], dtype=np.int64))
    scale = b.const("scale", np.array(math.sqrt(head), dtype=np.float32))
    for n in range(layers):
        p = f"encoder.layer.{n}."
        q = b.op("Transpose", [b.op("Reshape", [linear(x, p + "attention.self.query"), split])], perm=[0, 2, 1, 3])
        k = b.op("Transpose", [b.op("Reshape", [linear(x, p + "attention.self.key"), split])], perm=[0, 2, 3, 1])
        v = b.op("Transpose", [b.op("Reshape", [linear(x, p + "attention.self.value"), split])], perm=[0, 2, 1, 3])
        scores = b.op("Add", [b.op("Div", [b.op("MatMul", [q, k]), scale]), mask])
        context = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
        context = b.op("Reshape", [b.op("Transpose", [context], perm=[0, 2, 1, 3]), merged])
        x = norm(b.op("Add", [linear(context, p + "attention.output.dense"), x]), p + "attention.output.LayerNorm")
        inner = linear(x, p + "intermediate.dense")  # gelu(y) = y/2 · (1 + erf(y / √2))
        erf = b.op("Erf", [b.op("Div", [inner, b.const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))])])
        gelu = b.op("Mul", [b.op("Mul", [inner, b.op("Add", [erf, b.const("one_f", np.array(1.0, dtype=np.float32))])]),
                            b.const("half", np.array(0.5, dtype=np.float32))])  # fmt: skip
        x = norm(b.op("Add", [linear(gelu, p + "output.dense"), x]), p + "output.LayerNorm")
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", hidden])
    graph = helper.make_graph(b.nodes, "bert", inputs, [output], initializer=b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="ragkit")
    model.ir_version = 8
    return model
