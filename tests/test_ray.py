"""``ragkit index --engine ray`` (issue 17): a local Ray (2 CPUs) parses, chunks and embeds; the driver commits.
The index equals the local pipeline's: same chunk ids, same vectors, same query results. Real bundled model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ragkit import api
from ragkit.config import IndexConfig, QueryConfig
from ragkit.store.lance import ChunkTable
from ragkit.store.remote import lance_location
from tests.conftest import write

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray[data]')")


def vectors(index_dir) -> dict[str, np.ndarray]:
    run = api.open_index(index_dir).manifest["last_run"]
    ids, mat = ChunkTable(lance_location(index_dir), run["lance_table"], run["lance_version"]).all_vectors()
    return dict(zip(ids, mat))


@pytest.mark.integration
def test_ray_pipeline_equals_the_local_one(corpus, tmp_path):
    write(corpus, "de/arbzg.md", "# Arbeitszeitgesetz\n\n## § 3 Arbeitszeit\n\nDie werktägliche Arbeitszeit darf "
                                 "acht Stunden nicht überschreiten.\n")
    (corpus / "blob.txt").write_text("QUFBQUFB" * 3000)  # skipped on both paths, for the same reason
    local = api.index([corpus], tmp_path / "local", IndexConfig())
    on_ray = api.index([corpus], tmp_path / "ray", IndexConfig(engine="ray", ray_workers=2))
    assert (on_ray.new, on_ray.skipped, on_ray.chunks) == (local.new, local.skipped, local.chunks) == (4, 1, on_ray.chunks)
    assert [w for w in on_ray.warnings if "blob" in w] == [w for w in local.warnings if "blob" in w]
    a, b = vectors(tmp_path / "local"), vectors(tmp_path / "ray")
    assert a.keys() == b.keys()
    assert max(float(np.abs(a[k] - b[k]).max()) for k in a) < 1e-5
    for q in ("how long may a working day be?", "rollback container image", "overtime limit"):
        ra, rb = (api.query(api.open_index(tmp_path / d), q, QueryConfig(k=5)) for d in ("local", "ray"))
        assert [p.chunk_ids for p in ra.passages] == [p.chunk_ids for p in rb.passages]

    (corpus / "notes/meeting.txt").write_text("Meeting notes\n\nThe planning meeting moved to Thursday.\n")
    again = api.index([corpus], tmp_path / "ray", replace(IndexConfig(), engine="ray", ray_workers=1))
    assert again.changed == 1 and again.unchanged == 3 and again.skipped == 1


@pytest.mark.integration
def test_a_jsonl_corpus_spreads_over_workers(tmp_path, monkeypatch):
    """A BEIR corpus.jsonl is one file; on Ray it is parsed in parts of records, with the same result."""
    import json

    from ragkit.ingest import ray_engine

    monkeypatch.setattr(ray_engine, "JSONL_PART", 7)
    folder = tmp_path / "beir"
    folder.mkdir()
    topics = ["overtime", "parking", "sauna", "rollback", "holiday", "badge", "laptop", "travel"]
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": f"d{i}", "title": f"Note {i}", "text": f"Note {i} is about {topics[i % 8]} and "
                    f"{topics[(i * 3) % 8]}; it was written on day {i}."}) + "\n" for i in range(30)))
    assert len(ray_engine._parts(ray_engine.SourceFile(folder / "corpus.jsonl", "c", 0, 0),
                                 (folder / "corpus.jsonl").read_bytes())) == 5
    local = api.index([folder], tmp_path / "local", IndexConfig())
    on_ray = api.index([folder], tmp_path / "ray", IndexConfig(engine="ray", ray_workers=2))
    assert on_ray.documents == local.documents == 30 and on_ray.chunks == local.chunks
    a, b = vectors(tmp_path / "local"), vectors(tmp_path / "ray")
    assert a.keys() == b.keys() and max(float(np.abs(a[k] - b[k]).max()) for k in a) < 1e-5
