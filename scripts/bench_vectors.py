#!/usr/bin/env python
"""Where an ANN index starts to pay: exact in-memory search against Lance's IVF_PQ index, by table size.

    python scripts/bench_vectors.py [--index <index>] [--sizes 10000,50000,100000,250000,500000]
        [--queries 50] [--fetch 100]

Vectors: the chunk vectors of ``--index`` (default: the scifact-train eval index when present), each repeated
with Gaussian noise up to the size (so the clusters of real text stay), else a Gaussian mixture; queries are
held-out vectors of the same kind. For each size, one process and side by side: the exact search as the query
path runs it (one float32 matrix, a product on one BLAS thread, top ``--fetch`` by partition; ragkit/store/
lance.py ``ChunkTable``), the seconds to read that matrix from a Lance table, and Lance's nearest search
through an IVF_PQ index built with the indexer's settings (LanceDB's defaults), plain and with a refine
factor, with its recall@10 against the exact top 10.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import ragkit  # noqa: E402,F401  (one BLAS thread, as in a query process)

ROOT = Path(__file__).resolve().parent.parent
REFINE = 5  # refine_factor: re-rank 5 × fetch PQ candidates with the stored vectors
NOISE = 0.35  # norm of the noise added to a real vector (cosine to it ≈ 0.94)


def base_vectors(index: str | None, dim: int = 384) -> np.ndarray:
    if index and Path(index).exists():
        from ragkit import api

        return api.open_index(index).chunks.all_vectors()[1]
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((1024, dim)).astype(np.float32)
    return centres[rng.integers(0, 1024, 20_000)] + 0.5 * rng.standard_normal((20_000, dim)).astype(np.float32)


def sample(base: np.ndarray, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal((n, base.shape[1])).astype(np.float32)
    v = base[rng.integers(0, len(base), n)] + NOISE * noise / np.sqrt(base.shape[1])
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)  # as the chunks table stores them


def exact_top(mat: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    sims = mat @ q
    top = np.argpartition(-sims, k)[:k]
    return top[np.argsort(-sims[top], kind="stable")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", default=str(ROOT / "indexes/eval-scifact-train"))
    ap.add_argument("--sizes", default="10000,50000,100000,250000,500000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--fetch", type=int, default=100, help="rows a search returns (a strategy's fetch)")
    args = ap.parse_args()
    import lance

    base = base_vectors(args.index)
    queries = sample(base, args.queries, seed=99)
    tab = Table(
        title=f"exact in-memory search vs Lance IVF_PQ, {base.shape[1]} dims, top {args.fetch}, "
        f"{args.queries} queries (ms are medians)"
    )
    for col in (
        "rows",
        "matrix MB",
        "read matrix s",
        "exact ms",
        "IVF_PQ build s",
        "IVF_PQ ms / recall@10",
        f"+ refine ×{REFINE} ms / recall@10",
    ):
        tab.add_column(col, justify="right")
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
            ds.create_index(
                "vector",
                index_type="IVF_PQ",
                metric="cosine",  # LanceDB's defaults
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
                    t = time.perf_counter()
                    got = (
                        ds.to_table(
                            columns=["id"],
                            disable_scoring_autoprojection=True,
                            nearest=nearest | ({"refine_factor": refine} if refine else {}),
                        )
                        .column("id")
                        .to_pylist()
                    )
                    ms.append((time.perf_counter() - t) * 1000)
                    recall.append(len(want & set(got[:10])) / 10)
                ann[refine] = statistics.median(ms), statistics.fmean(recall)
        e = statistics.median(exact_ms)
        tab.add_row(
            f"{n:,}",
            f"{mat.nbytes / 2**20:.0f}",
            f"{read_s:.2f}",
            f"{e:.2f}",
            f"{build_s:.1f}",
            *(f"{ann[r][0]:.2f} / {ann[r][1]:.3f}" for r in (None, REFINE)),
        )
        print(f"{n:,} rows done", file=sys.stderr)
    Console(width=160).print(tab)


if __name__ == "__main__":
    main()
