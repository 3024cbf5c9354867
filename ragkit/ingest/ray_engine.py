"""``ragkit index --engine ray``: parsing, chunking and embedding as a Ray Data pipeline.

The driver (ragkit/ingest/pipeline.py) finds the files, reads and hashes them and diffs against the committed
run, exactly as a local run; the files to index go to Ray as one dataset (path, bytes, hash), and
``map_batches`` runs them through actors that each load the encoder once (``SourceParser`` + the embedder, as
in process). The driver gets back every file's documents and chunks, or why it was skipped, and every chunk's
vector, and writes and commits them as a local run does: the same LanceDB and DuckDB rows, the same chunk ids.

``--ray-address auto`` (or ``ray://host:10001``) joins a running cluster; without it a local Ray is started
with ``--ray-workers`` CPUs (default: all). The files' bytes travel through Ray's object store, so workers need
no shared file system; the driver reading every file is what bounds the corpus size on this path.
"""

from __future__ import annotations

import os
import pickle
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ragkit.config import IndexConfig
from ragkit.errors import BadInput, RagkitError
from ragkit.ingest.discover import SourceFile

BATCH = 4  # items (files, or parts of a JSONL corpus) per batch handed to an actor
JSONL_PART = 256  # records of a JSONL corpus (BEIR corpus.jsonl) per item: one big file still spreads


class _Worker:
    """One Ray actor: the parser and the encoder, loaded once."""

    def __init__(self, cfg: IndexConfig, version_of: str | None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from ragkit.embed import load_embedder
        from ragkit.ingest.source import SourceParser

        self.embedder = load_embedder(cfg.embed_model, cfg.embed_batch_size, cfg.encoder)
        self.parser = SourceParser(cfg, self.embedder, version_of)

    def __call__(self, batch: dict[str, Any]) -> dict[str, list]:
        from pathlib import Path

        from ragkit.ingest.discover import Undecodable
        from ragkit.ingest.parse import ParseError

        out = []
        for path, rel, size, mtime_ns, digest, data in zip(batch["path"], batch["rel"], batch["size"],
                                                            batch["mtime_ns"], batch["hash"], batch["data"]):
            # (a part of a JSONL corpus parses as the whole file would: its documents' ids come from the
            # whole file's hash and their own ids)
            src = SourceFile(Path(path), rel, int(size), int(mtime_ns))
            try:
                results, failure = self.parser.parse(src, bytes(data), digest), None
            except (Undecodable, ParseError) as exc:
                results, failure = [], str(exc)
            chunks = [c for _, doc_chunks in results for c in doc_chunks]
            vectors = self.embedder.encode([c.embed_text for c in chunks]) if chunks else None
            out.append(pickle.dumps((results, failure, [c.id for c in chunks], vectors),
                                    protocol=pickle.HIGHEST_PROTOCOL))
        return {"n": list(batch["n"]), "part": list(batch["part"]), "out": out}


def _parts(f: SourceFile, data: bytes) -> list[bytes]:
    """A JSONL corpus in parts of ``JSONL_PART`` records (whole lines); any other file whole."""
    if f.path.suffix.lower() != ".jsonl":
        return [data]
    lines = data.splitlines(keepends=True)
    return [b"".join(lines[i:i + JSONL_PART]) for i in range(0, len(lines), JSONL_PART)] or [data]


def _rows(ds):
    """The dataset's rows; a worker's failure (a model missing on a node, …) as a ragkit error."""
    try:
        yield from ds.iter_rows()
    except Exception as exc:  # Ray wraps the worker's exception in its own
        cause = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
        raise RagkitError(f"a Ray worker failed: {cause}", hint="Every node needs ragkit and its bundled model "
                          "installed; see the Ray worker logs (ray logs) for the whole traceback.") from exc


@dataclass
class Prepared:
    """What the workers made of the run's files, in the driver's order."""

    outcomes: list[tuple[list, str | None]]  # per file: (documents with their chunks, why it was skipped)
    vectors: dict[str, np.ndarray]  # chunk id → vector
    seconds: dict[str, float] = field(default_factory=dict)  # ray_start (joining or starting Ray), ray_work

    def results(self, n: int) -> list:
        from ragkit.ingest.parse import ParseError

        results, failure = self.outcomes[n]
        if failure is not None:
            raise ParseError(failure)
        return results

    def vectors_for(self, chunk_ids: list[str], dim: int) -> np.ndarray:
        return np.stack([self.vectors[i] for i in chunk_ids]) if chunk_ids else np.zeros((0, dim), np.float32)


def prepare(todo: list[tuple[SourceFile, bytes, str, bool]], cfg: IndexConfig, version_of: str | None,
            progress: Callable[[int], None] | None = None) -> Prepared:
    """Parse, chunk and embed ``todo`` (file, bytes, hash, changed) on Ray."""
    try:
        import ray
    except ImportError as exc:
        raise BadInput("--engine ray needs Ray", hint='pip install "ray[data]"') from exc

    t0 = time.perf_counter()
    started = False
    if not ray.is_initialized():
        if cfg.ray_address:
            ray.init(address=cfg.ray_address, log_to_driver=False)
        else:
            ray.init(num_cpus=cfg.ray_workers or os.cpu_count(), include_dashboard=False, log_to_driver=False)
        started = True
    try:
        workers = cfg.ray_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        t1 = time.perf_counter()
        split = [_parts(f, data) for f, data, _, _ in todo]
        items = [{"n": n, "part": k, "path": str(f.path), "rel": f.rel, "size": f.size, "mtime_ns": f.mtime_ns,
                  "hash": h, "data": part} for n, (f, _, h, _) in enumerate(todo) for k, part in enumerate(split[n])]
        ds = ray.data.from_items(items).map_batches(
            _Worker, fn_constructor_kwargs={"cfg": cfg, "version_of": version_of}, batch_size=BATCH,
            concurrency=workers, num_cpus=1, batch_format="default")
        parts: dict[int, dict[int, tuple[list, str | None]]] = {}
        vectors: dict[str, np.ndarray] = {}
        for row in _rows(ds):
            results, failure, ids, mat = pickle.loads(row["out"])
            n = int(row["n"])
            parts.setdefault(n, {})[int(row["part"])] = (results, failure)
            if mat is not None:
                vectors.update(zip(ids, mat))
            if progress and len(parts[n]) == len(split[n]):
                progress(1)
        outcomes = []
        for n in range(len(todo)):  # a file's parts in order; one part that fails fails the file
            got = [parts[n][k] for k in sorted(parts[n])]
            failure = next((f for _, f in got if f is not None), None)
            outcomes.append(([] if failure else [r for results, _ in got for r in results], failure))
        return Prepared(outcomes, vectors, {"ray_start": round(t1 - t0, 3),
                                            "ray_work": round(time.perf_counter() - t1, 3)})
    finally:
        if started:
            ray.shutdown()
