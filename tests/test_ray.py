"""``ragkit index --engine ray`` (issue 17): a local Ray (2 CPUs) parses, chunks and embeds; the driver commits.
The index equals the local pipeline's: same chunk ids, same vectors, same query results. Real bundled model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import ragkit
from ragkit.config import IndexConfig, QueryConfig, resolve_index_dir
from ragkit.embed import MULTILINGUAL
from ragkit.store.chunks import open_chunks
from ragkit.store.remote import lance_location
from tests.conftest import write
from tests.s3 import BUCKET

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray[data]')")


def vectors(index_dir) -> dict[str, np.ndarray]:
    ids, mat = table(index_dir).all_vectors()
    return dict(zip(ids, mat))


def table(index):
    run = ragkit.open(index).reader.manifest.last_run
    return open_chunks(lance_location(resolve_index_dir(str(index))), run.lance_table, run.lance_version)


def same_index(a, b) -> None:
    """The two indexes hold the same chunk rows (vectors within 1e-5) and DuckDB rows."""
    from ragkit.store.duck import DuckStore
    from ragkit.store.layout import store_path

    cols = ["id", "document_id", "section_id", "chunk_index", "content", "line_start", "line_end", "path"]
    rows = [sorted(table(d).ds.to_table(columns=cols).to_pylist(), key=lambda r: r["id"]) for d in (a, b)]
    assert rows[0] == rows[1]
    va, vb = vectors(a), vectors(b)
    assert va.keys() == vb.keys() and max(float(np.abs(va[k] - vb[k]).max()) for k in va) < 1e-5
    counts = []
    for d in (a, b):
        with DuckStore(store_path(resolve_index_dir(str(d)), ragkit.open(d).reader.manifest), read_only=True) as store:
            counts.append(
                {
                    t: store.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                    for t in ("documents", "sections", "chunks", "entities", "refs")
                }
            )
    assert counts[0] == counts[1]


@pytest.mark.integration
def test_ray_pipeline_equals_the_local_one(corpus, tmp_path, monkeypatch):
    from ragkit.ingest import ray_engine

    monkeypatch.setattr(ray_engine, "ITEM_BYTES", 1)  # a work item (and a fragment) per file
    write(
        corpus,
        "de/arbzg.md",
        "# Arbeitszeitgesetz\n\n## § 3 Arbeitszeit\n\nDie werktägliche Arbeitszeit darf "
        "acht Stunden nicht überschreiten.\n",
    )
    (corpus / "blob.txt").write_text("QUFBQUFB" * 3000)  # skipped on both paths, for the same reason
    local = ragkit.index([corpus], tmp_path / "local", cfg=IndexConfig())
    on_ray = ragkit.index([corpus], tmp_path / "ray", cfg=IndexConfig(engine="ray", ray_workers=2))
    assert (
        (on_ray.new, on_ray.skipped, on_ray.chunks) == (local.new, local.skipped, local.chunks) == (4, 1, on_ray.chunks)
    )
    assert [w for w in on_ray.warnings if "blob" in w] == [w for w in local.warnings if "blob" in w]
    same_index(tmp_path / "local", tmp_path / "ray")
    for q in ("how long may a working day be?", "rollback container image", "overtime limit"):
        ra, rb = (ragkit.open(tmp_path / d).query(q, QueryConfig(k=5)) for d in ("local", "ray"))
        assert [p.chunk_ids for p in ra.passages] == [p.chunk_ids for p in rb.passages]

    (corpus / "notes/meeting.txt").write_text("Meeting notes\n\nThe planning meeting moved to Thursday.\n")
    again = ragkit.index([corpus], tmp_path / "ray", cfg=replace(IndexConfig(), engine="ray", ray_workers=1))
    assert again.changed == 1 and again.unchanged == 3 and again.skipped == 1


@pytest.mark.integration
def test_a_jsonl_corpus_spreads_over_workers(tmp_path, monkeypatch):
    """A BEIR corpus.jsonl is one file; on Ray it is parsed in parts of records, with the same result."""
    import json

    from ragkit.ingest import ray_engine

    monkeypatch.setattr(ray_engine, "JSONL_PART", 7)
    monkeypatch.setattr(ray_engine, "ITEM_BYTES", 1)  # a work item (and a fragment) per part
    folder = tmp_path / "beir"
    folder.mkdir()
    topics = ["overtime", "parking", "sauna", "rollback", "holiday", "badge", "laptop", "travel"]
    (folder / "corpus.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "_id": f"d{i}",
                    "title": f"Note {i}",
                    "text": f"Note {i} is about {topics[i % 8]} and {topics[(i * 3) % 8]}; it was written on day {i}.",
                }
            )
            + "\n"
            for i in range(30)
        )
    )
    assert (
        len(
            ray_engine._parts(
                ray_engine.SourceFile(folder / "corpus.jsonl", "c", 0, 0), (folder / "corpus.jsonl").read_bytes()
            )
        )
        == 5
    )
    # a second corpus has a document twice (in two parts: the first one counts) and a third one a broken line
    # in its third part (the whole file is skipped, its other parts' rows too)
    (folder / "twice.jsonl").write_text(
        "".join(
            json.dumps({"_id": "x" if i in (2, 11) else f"t{i}", "text": f"Entry {i} on {topics[i % 8]}."}) + "\n"
            for i in range(12)
        )
    )
    (folder / "broken.jsonl").write_text(
        "".join(
            (json.dumps({"_id": f"b{i}", "text": f"Broken {i}"}) if i != 16 else "{not json") + "\n" for i in range(20)
        )
    )
    local = ragkit.index([folder], tmp_path / "local", cfg=IndexConfig())
    on_ray = ragkit.index([folder], tmp_path / "ray", cfg=IndexConfig(engine="ray", ray_workers=2))
    assert on_ray.documents == local.documents == 41 and on_ray.chunks == local.chunks
    assert on_ray.skipped == local.skipped == 1
    same_index(tmp_path / "local", tmp_path / "ray")
    assert table(tmp_path / "ray").ds.count_rows() == local.chunks


@pytest.mark.integration
def test_a_failing_worker_is_a_ragkit_error(corpus, tmp_path):
    """A worker that cannot load the model (here: multilingual-e5-small, which a machine converts into its cache
    once, and a cache folder the worker cannot write) fails the run with a ragkit error and a hint; nothing is
    committed."""
    from ragkit.errors import RagkitError

    ray.init(
        num_cpus=1,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"RAGKIT_CACHE": "/dev/null/cache"}},
    )
    try:
        with pytest.raises(RagkitError, match="a Ray worker failed") as caught:
            ragkit.index(
                [corpus], tmp_path / "ray", cfg=IndexConfig(engine="ray", ray_workers=1, embed_model=MULTILINGUAL)
            )
    finally:
        ray.shutdown()
    assert 'ragkit with its ray extra (pip install "ragkit[ray]")' in caught.value.hint
    assert not (tmp_path / "ray" / "manifest.json").exists()


@pytest.mark.integration
def test_ray_workers_write_into_an_index_on_s3(s3, corpus, tmp_path):
    """On object storage the workers write their fragments into the bucket; the driver commits them: the index
    equals a local one, and an incremental Ray run on it follows."""
    uri = f"s3://{BUCKET}/ray"
    local = ragkit.index([corpus], tmp_path / "local", cfg=IndexConfig())
    on_ray = ragkit.index([corpus], uri, cfg=IndexConfig(engine="ray", ray_workers=2))
    assert on_ray.chunks == local.chunks
    same_index(tmp_path / "local", uri)
    (corpus / "notes/meeting.txt").write_text("Meeting notes\n\nThe planning meeting moved to Thursday.\n")
    again = ragkit.index([corpus], uri, cfg=IndexConfig(engine="ray", ray_workers=1))
    assert again.changed == 1 and again.unchanged == 2
    r = ragkit.open(uri).query("when is the planning meeting?", QueryConfig(k=3))
    assert r.run == 2 and r.passages[0].path.endswith("meeting.txt")


@pytest.mark.integration
def test_ragkit_index_joins_a_running_cluster(corpus, tmp_path):
    """``ragkit index --engine ray --ray-address HOST:PORT`` (a CLI process) joins a cluster started by
    ``ray start --head`` and builds the same index as the local pipeline."""
    import json
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    ray_cli = Path(sys.executable).parent / "ray"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run(
        [
            str(ray_cli),
            "start",
            "--head",
            "--num-cpus",
            "2",
            "--port",
            str(port),
            "--node-ip-address",
            "127.0.0.1",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    try:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "ragkit",
                "index",
                str(corpus),
                "--index",
                str(tmp_path / "ray"),
                "--engine",
                "ray",
                "--ray-address",
                f"127.0.0.1:{port}",
                "--json",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        summary = json.loads(out.stdout)
        assert summary["new"] == 3 and summary["seconds"]["ray_work"] > 0
    finally:
        subprocess.run([str(ray_cli), "stop", "--force"], env=env, capture_output=True, timeout=120)
    ragkit.index([corpus], tmp_path / "local", cfg=IndexConfig())
    same_index(tmp_path / "local", tmp_path / "ray")
