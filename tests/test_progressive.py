"""A progressive index (issue 36): searchable after one fast run, the full model's vectors filled in batch by
batch (each batch committed), queries using the best vector each chunk has, and in the end the same index a
plain run with the full model makes."""

import json

import numpy as np
import pytest

import ragkit
from ragkit.config import IndexConfig, QueryConfig
from tests.fakes import FakeEmbedder

FAST = FakeEmbedder(dim=32, name="fast", fingerprint="fast-0001")
FULL = FakeEmbedder(dim=48, name="full", fingerprint="full-0001")


def factory(cfg: IndexConfig):
    return FAST if cfg.embed_model.startswith("static:") else FULL


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for n in range(12):
        (root / f"law{n}.md").write_text(
            f"# Gesetz {n}\n\n## § 1 Zweck\n\nDieses Gesetz Nummer {n} regelt die Arbeitszeit der Beschäftigten {n}.\n\n"
            f"## § 2 Ruhepausen\n\nDie Ruhepause beträgt {n + 10} Minuten nach sechs Stunden Arbeit.\n"
        )
    return root


def manifest(idx):
    return json.loads((idx / "manifest.json").read_text())


def test_a_progressive_index_fills_in_batch_by_batch_and_ends_as_a_plain_one(tmp_path, corpus):
    idx, plain = tmp_path / "progressive", tmp_path / "plain"
    cfg = IndexConfig(progressive=True, embed_model="bundled:all-MiniLM-L6-v2")
    summary = ragkit.index([corpus], idx, cfg=cfg, embedder_factory=factory, fill_batch=10, max_fill_batches=2)
    chunks = summary.total_chunks
    assert summary.fill["batches"] == 2 and summary.fill["filled"] == 20 and not summary.fill["switched"]
    m = manifest(idx)
    assert m["embedder"]["name"] == "fast" and m["fill"]["name"] == "full" and m["fill"]["filled"] == 20

    ix = ragkit.open(idx, embedder=FAST, full_embedder=FULL)
    stats = ix.stats()
    assert stats["fill"] == {"model": "full", "filled": 20, "total": chunks, "share": 20 / chunks}
    result = ix.query("Ruhepause Minuten", QueryConfig(k=5, strategy="naive"))
    assert result.passages  # both tiers searched: the filled chunks with the full model, the rest with the fast

    # nothing changed: the fill goes on
    done = ragkit.index([corpus], idx, cfg=cfg, embedder_factory=factory, fill_batch=10)
    assert done.fill["switched"] and done.fill["filled"] == chunks
    m = manifest(idx)
    assert "fill" not in m and m["embedder"]["name"] == "full" and m["index_config"]["embed_model"]
    assert not (idx / "lance" / "fill.lance").exists()

    ragkit.index([corpus], plain, cfg=IndexConfig(embed_model="bundled:all-MiniLM-L6-v2"), embedder_factory=factory)
    a, b = ragkit.open(idx, embedder=FULL), ragkit.open(plain, embedder=FULL)
    ids_a, vec_a = a.reader.chunks.all_vectors()
    ids_b, vec_b = b.reader.chunks.all_vectors()
    order = np.argsort(ids_a), np.argsort(ids_b)
    assert sorted(ids_a) == sorted(ids_b)
    assert np.allclose(vec_a[order[0]], vec_b[order[1]])
    for q in ("Ruhepause Minuten", "Arbeitszeit Zweck Gesetz 7"):
        got = [p.chunk_ids for p in a.query(q, QueryConfig(k=5)).passages]
        assert got == [p.chunk_ids for p in b.query(q, QueryConfig(k=5)).passages]


def test_paths_given_first_are_filled_first(tmp_path, corpus):
    idx = tmp_path / "idx"
    with (corpus / "law11.md").open("a") as fh:
        fh.write("\n## § 3 Binnenschifffahrt\n\nSonderregeln für Matrosen auf Binnenschiffen und Fähren.\n")
    cfg = IndexConfig(progressive=True, embed_model="bundled:all-MiniLM-L6-v2")
    ragkit.index(
        [corpus], idx, cfg=cfg, embedder_factory=factory, fill_batch=4, max_fill_batches=1, fill_first=["*law11.md"]
    )
    ix = ragkit.open(idx, embedder=FAST, full_embedder=FULL)
    filled = ix.reader.fill.ids()
    paths = {r["id"]: r["path"] for r in ix.reader.chunks.ds.to_table(columns=["id", "path"]).to_pylist()}
    law11 = {i for i, path in paths.items() if path.endswith("law11.md")}
    assert law11 and law11 <= filled and len(filled) == 4  # its chunks in the first batch of four
    top = ix.query("Matrosen auf Binnenschiffen", QueryConfig(k=3, strategy="naive"))
    assert top.passages[0].path.endswith("law11.md")  # its full vector, merged with the others' fast ones


def test_a_run_between_batches_is_filled_too(tmp_path, corpus):
    idx = tmp_path / "idx"
    cfg = IndexConfig(progressive=True, embed_model="bundled:all-MiniLM-L6-v2")
    ragkit.index([corpus], idx, cfg=cfg, embedder_factory=factory, fill_batch=10, max_fill_batches=1)
    (corpus / "law3.md").write_text("# Gesetz 3\n\n## § 1 Neu\n\nGeändert: Urlaub von dreißig Tagen.\n")
    (corpus / "law4.md").unlink()
    summary = ragkit.index([corpus], idx, cfg=cfg, embedder_factory=factory, fill_batch=10)
    assert summary.fill["switched"]
    ix = ragkit.open(idx, embedder=FULL)
    assert manifest(idx)["embedder"]["fingerprint"] == "full-0001"
    top = ix.query("Urlaub dreißig Tage", QueryConfig(k=3, strategy="naive")).passages[0]
    assert top.path.endswith("law3.md")


@pytest.mark.integration
def test_parsing_on_every_core_gives_the_same_index(tmp_path):
    """Many files are parsed and chunked in worker processes (each with its own tokenizer): the index equals
    the one parsed in process, chunk for chunk."""
    root = tmp_path / "docs"
    root.mkdir()
    for n in range(140):
        (root / f"note{n:03}.md").write_text(f"# Note {n}\n\nOvertime rule {n}: at most {n % 12} hours a week.\n")
    cfg = IndexConfig(embed_model="bundled:all-MiniLM-L6-v2")
    pooled = ragkit.index([root], tmp_path / "pooled", cfg=cfg, parse_workers=2)  # the default model factory
    serial = ragkit.index([root], tmp_path / "serial", cfg=cfg, parse_workers=1)  # parsed in process
    assert pooled.total_chunks == serial.total_chunks == 140

    def rows(name):
        ix = ragkit.open(tmp_path / name)
        data = ix.reader.chunks.ds.to_table(columns=["id", "content", "line_start", "line_end"]).to_pylist()
        return sorted(data, key=lambda r: r["id"])

    assert rows("pooled") == rows("serial")


def test_tiers_merge_by_how_far_a_hit_stands_above_its_own_tier():
    """A static model's cosines run low, a full model's high: a hit is placed by its z-score in its own tier,
    so neither tier wins by its scale, and however few chunks are filled, a full-tier hit far above its
    typical chunk comes first."""
    from ragkit.retrieve.tiers import merge, zscores

    rng = np.random.default_rng(0)
    q = np.ones(8) / np.sqrt(8)
    low = rng.normal(0.1, 0.02, size=(64, 8))  # a static tier: everything near cosine 0.3
    high = rng.normal(0.3, 0.01, size=(64, 8))  # a full tier: everything near 0.85
    fast_z = zscores([0.35, 0.34], low / np.linalg.norm(low, axis=1, keepdims=True), q)
    full_z = zscores([0.99, 0.86], high / np.linalg.norm(high, axis=1, keepdims=True), q)
    rows = merge([{"id": "f1"}, {"id": "f2"}], fast_z, [{"id": "F1"}, {"id": "F2"}], full_z, 3)
    assert rows[0]["id"] == "F1" and "F2" not in [r["id"] for r in rows[:2]]
    assert all(r["_distance"] < rows[-1]["_distance"] + 1e-9 for r in rows)
