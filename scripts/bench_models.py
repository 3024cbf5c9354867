#!/usr/bin/env python
"""The model layer: models in-process against the same models behind a real server on loopback, side by side.

    python scripts/bench_models.py SUBCOMMAND [options]     (SUBCOMMAND --help for its options)

Subcommands:
  embed     index throughput and warm query latency: the bundled MiniLM in-process vs served by
            ``ragkit models serve`` (the same int8 ONNX model; the difference is the HTTP path)
  rerank    added warm latency of reranking 50 candidates: a CrossEncoder (built from the bundled MiniLM's
            weights, a seeded head) served by ``ragkit models serve``; and an in-process GGUF reranker
            (the bundled GGUF, yes/no scoring) per candidate
  generate  time to first token and tokens/s of an answer streamed from llama-cpp-python's server (the bundled
            GGUF), against the same model in-process

The servers are started by the script on free loopback ports (tests/servers.py) and stopped after.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import harness
from harness import SHARED, arg, print_table, query_config, query_texts

from ragkit.config import IndexConfig
from ragkit.embed import BUNDLED, load_embedder
from ragkit.generate import load_generator, resolve_model
from ragkit.rerank.models import load_reranker

cli = harness.CLI(__doc__)
servers = harness.tests_module("servers")


def _median_ms(fn, runs: list[str]) -> float:
    times = []
    for text in runs:
        t = time.perf_counter()
        fn(text)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


@cli.command(
    "embed",
    arg("--corpus", type=Path, default=SHARED / "hotpotqa-100" / "corpus.jsonl"),
    arg("--queries", type=Path, default=SHARED / "hotpotqa-100" / "queries.jsonl"),
    arg("--n", type=int, default=100, help="queries timed warm"),
    arg("--rounds", type=int, default=2, help="index runs per side (alternating)"),
)
def embed(args) -> None:
    """Index the corpus with the bundled MiniLM (int8 ONNX) in-process and through ``ragkit models serve``,
    alternating, from scratch each time; then the warm hybrid query p50 of each index (its query vector
    in-process vs over HTTP). Ratio = HTTP / in-process."""
    work = Path(tempfile.mkdtemp(prefix="ragkit-models-"))
    texts = query_texts(args.queries, args.n)
    with servers.ragkit_models(work / "embed.log", embed=BUNDLED) as server:
        spec = server.spec("all-MiniLM-L6-v2")
        load_embedder(spec).encode(["warm up"])
        sides = {"in-process": BUNDLED, "http": spec}
        seconds: dict[str, list[float]] = {side: [] for side in sides}
        for r in range(args.rounds):
            for side, model in sides.items():
                where = work / f"{side}-{r}"
                summary = harness.index_into([args.corpus], where, IndexConfig(embed_model=model), full=True)
                seconds[side].append(summary.seconds["embed"])
        latency = {}
        for side in sides:
            ix = harness.open_index(work / f"{side}-0")
            cfg = query_config(strategy="hybrid", k=10)
            ix.query("warm up", cfg)
            latency[side] = (
                _median_ms(lambda t, i=ix, c=cfg: i.query(t, c), texts),
                _median_ms(ix.reader.embedder.encode_query, texts),
            )
    base, http = statistics.median(seconds["in-process"]), statistics.median(seconds["http"])
    rows = [
        [side, f"{statistics.median(seconds[side]):.2f}", f"{latency[side][1]:.2f}", f"{latency[side][0]:.2f}"]
        for side in sides
    ]
    print_table(
        f"MiniLM in-process vs served, {args.corpus}",
        ["embedder", "embed s", "query vector ms", "hybrid p50 ms"],
        rows,
        notes=[
            f"index embedding: HTTP / in-process = {http / base:.2f}×",
            f"added per query: {latency['http'][0] - latency['in-process'][0]:+.2f} ms (hybrid p50)",
        ],
    )


@cli.command(
    "rerank",
    arg("--corpus", type=Path, default=SHARED / "hotpotqa-100" / "corpus.jsonl"),
    arg("--queries", type=Path, default=SHARED / "hotpotqa-100" / "queries.jsonl"),
    arg("--n", type=int, default=20),
    arg("--gguf-n", type=int, default=3, help="queries for the in-process GGUF reranker (slow)"),
)
def rerank(args) -> None:
    """Warm hybrid p50 with the structure features only, with an HTTP reranker over 50 candidates, and the
    in-process GGUF reranker's milliseconds per candidate."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from ragkit.embed import BUNDLED
    from ragkit.embed.models import torch_model_dir

    bundled_model_dir = lambda: torch_model_dir(BUNDLED)  # noqa: E731 (the float32 weights transformers reads)
    work = Path(tempfile.mkdtemp(prefix="ragkit-rerank-"))
    folder = work / "mini-cross"
    cfg = BertConfig.from_pretrained(bundled_model_dir(), num_labels=1)
    torch.manual_seed(0)
    BertForSequenceClassification.from_pretrained(bundled_model_dir(), config=cfg).save_pretrained(folder)
    AutoTokenizer.from_pretrained(bundled_model_dir()).save_pretrained(folder)
    ix, _ = harness.indexed(args.corpus, work / "idx")
    texts = query_texts(args.queries, args.n)
    plain = query_config(strategy="hybrid", k=10)
    rows = []
    with servers.ragkit_models(work / "rerank.log", rerank=str(folder)) as server:
        spec = server.spec("mini-cross")
        crossed = query_config(strategy="hybrid", k=10, rerank="cross", rerank_model=spec)
        for label, cfg in (("features", plain), ("features + HTTP rerank (50)", crossed)):
            ix.query("warm up", cfg)
            rows.append([label, f"{_median_ms(lambda t, c=cfg: ix.query(t, c), texts):.1f}"])
    gguf = load_reranker(str(resolve_model(None)))
    docs = [h.text for h in ix.query(texts[0], plain).hits[:10]]
    gguf.score(texts[0], docs[:1])
    t = time.perf_counter()
    for q in texts[: args.gguf_n]:
        gguf.score(q, docs)
    per = (time.perf_counter() - t) * 1000 / (args.gguf_n * len(docs))
    print_table(
        "reranking 50 candidates, warm",
        ["config", "hybrid p50 ms"],
        rows,
        notes=[
            f"added by the HTTP reranker: {float(rows[1][1]) - float(rows[0][1]):+.1f} ms per query",
            f"in-process GGUF reranker ({gguf.name}, {gguf.mode}): {per:.1f} ms per candidate",
        ],
    )


@cli.command("generate", arg("--n", type=int, default=3), arg("--max-tokens", type=int, default=48))
def generate(args) -> None:
    """Time to first token and tokens/s: the bundled GGUF in-process vs behind llama-cpp-python's server."""
    prompt = "Write two sentences about how overtime hours are compensated at a company."
    work = Path(tempfile.mkdtemp(prefix="ragkit-gen-"))
    rows = []
    with servers.llama_server(resolve_model(None), "gemma", work / "llama.log") as server:
        for label, spec in (("in-process GGUF", None), ("llama-cpp-python server", server.spec("gemma"))):
            gen = load_generator(spec, n_ctx=2048)
            firsts, rates = [], []
            for _ in range(args.n):
                t, first, pieces = time.perf_counter(), None, []
                for piece in gen.stream(prompt, max_tokens=args.max_tokens, temperature=0.0):
                    first = first if first is not None else time.perf_counter() - t
                    pieces.append(piece)
                seconds = time.perf_counter() - t
                firsts.append(first or seconds)
                rates.append(len(pieces) / seconds if seconds else 0.0)
            rows.append([label, f"{statistics.median(firsts) * 1000:.0f}", f"{statistics.median(rates):.1f}"])
    print_table("generation, streamed", ["generator", "first token ms", "pieces/s"], rows)


if __name__ == "__main__":
    cli.main()
