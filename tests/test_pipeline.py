"""Indexing runs with the fake embedder: diff, incremental work, bad input, crash safety."""

import os
import time

import pytest

import ragkit
from ragkit.config import IndexConfig, QueryConfig
from ragkit.errors import BadInput, EmbedderMismatch
from ragkit.events import Collecting
from ragkit.store.duck import DuckStore
from tests.conftest import write
from tests.fakes import FakeEmbedder


def paths_of(ix, q, **kw):
    return [p.path for p in ix.query(q, QueryConfig(**kw)).passages]


def test_first_run_counts_and_tables(corpus, index_with):
    s, ix = index_with(corpus)
    assert (s.new, s.changed, s.unchanged, s.removed, s.skipped) == (3, 0, 0, 0, 0)
    assert s.total_documents == 3 and s.total_chunks == s.chunks > 3
    with ix.reader.duck() as store:
        assert store.counts()["documents"] == 3
        assert store.doc_types() == {"policy": 1, "technical": 1, "notes": 1}
    assert ix.reader.chunks.count() == s.total_chunks
    assert (ix.path / "manifest.json").is_file()


def test_second_run_touches_only_what_changed(corpus, index_with, fake):
    index_with(corpus)
    before = fake.encoded
    s, _ = index_with(corpus)
    assert (s.new, s.changed, s.unchanged, s.removed) == (0, 0, 3, 0)
    assert fake.encoded == before  # nothing re-embedded

    (corpus / "notes/meeting.txt").write_text("Meeting notes\n\nThe planning meeting is now on Friday.\n")
    write(corpus, "notes/new.md", "# New\n\nA brand new zebra document.\n")
    (corpus / "tech/deploy.rst").unlink()
    s, ix = index_with(corpus)
    assert (s.new, s.changed, s.unchanged, s.removed) == (1, 1, 1, 1)
    assert s.total_documents == 3
    assert "docs/notes/new.md" in paths_of(ix, "zebra", strategy="lexical")
    assert not any("deploy" in p for p in paths_of(ix, "rollback container image", strategy="lexical"))
    hits = ix.query("planning meeting", QueryConfig(strategy="lexical")).passages
    assert "Friday" in hits[0].text and "Tuesday" not in " ".join(p.text for p in hits)
    with ix.reader.duck() as store:
        orphans = store.con.execute(
            "SELECT count(*) FROM chunks WHERE document_id NOT IN (SELECT id FROM documents)"
        ).fetchone()[0]
        assert orphans == 0


def test_touched_but_identical_file_is_unchanged(corpus, index_with, fake):
    index_with(corpus)
    before = fake.encoded
    p = corpus / "notes/meeting.txt"
    os.utime(p, (time.time() + 10, time.time() + 10))
    s, _ = index_with(corpus)
    assert s.unchanged == 3 and fake.encoded == before


def test_full_rebuild(corpus, index_with):
    index_with(corpus)
    s, ix = index_with(corpus, full=True)
    assert s.new == 3 and s.total_documents == 3 and ix.reader.chunks.count() == s.total_chunks


def test_missing_path_and_empty_folder(tmp_path, index_with):
    with pytest.raises(BadInput, match="path not found"):
        index_with(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match="nothing indexable"):
        index_with(tmp_path / "empty")


def test_binary_and_undecodable_files_are_skipped(corpus, tmp_path, fake):
    (corpus / "blob.txt").write_bytes(b"\x00\x01\x02binary\x00")
    (corpus / "bad.md").write_bytes(b"\x81\x8d\x8f\x90\x9d bad")
    rep = Collecting()
    s = ragkit.index([corpus], tmp_path / "i", cfg=IndexConfig(), reporter=rep, embedder_factory=lambda c: fake)
    assert s.skipped == 2 and s.new == 3
    assert any("blob.txt" in w and "binary" in w for w in rep.warnings)
    assert any("bad.md" in w for w in rep.warnings)


def test_only_binary_files_is_an_error(tmp_path, fake):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.txt").write_bytes(b"\x00\x00")
    with pytest.raises(BadInput, match="nothing indexable"):
        ragkit.index([tmp_path / "d"], tmp_path / "i", embedder_factory=lambda c: fake)


def test_hidden_and_globs(corpus, index_with):
    write(corpus, ".git/config.md", "# hidden\n\nsecret\n")
    write(corpus, "drafts/x.md", "# Draft\n\ndraft text\n")
    s, _ = index_with(corpus, cfg=IndexConfig(exclude=["drafts/*"]))
    assert s.new == 3
    s, _ = index_with(corpus, cfg=IndexConfig(include=["*.md"]), name="md-only")
    assert s.new == 2


def test_failed_run_leaves_previous_index_queryable(corpus, index_with, fake, monkeypatch):
    _, ix = index_with(corpus)
    before = paths_of(ix, "overtime limited", strategy="lexical")
    write(corpus, "notes/extra.md", "# Extra\n\nOvertime is unlimited for zebras.\n")

    def boom(*a, **k):
        raise KeyboardInterrupt

    # dies after LanceDB got its new version, before the DuckDB commit
    monkeypatch.setattr(DuckStore, "commit_run", boom)
    with pytest.raises(KeyboardInterrupt):
        index_with(corpus)
    monkeypatch.undo()
    ix = ragkit.open(ix.path, embedder=fake)
    assert paths_of(ix, "overtime limited", strategy="lexical") == before
    assert not paths_of(ix, "zebras", strategy="lexical")
    # the next run recovers and picks the new file up
    s, ix = index_with(corpus)
    assert s.new == 1 and paths_of(ix, "zebras", strategy="lexical") == ["docs/notes/extra.md"]
    assert ix.reader.chunks.count() == s.total_chunks


def test_embedder_mismatch(corpus, index_with, tmp_path):
    index_with(corpus)
    other = FakeEmbedder(fingerprint="other")
    with pytest.raises(EmbedderMismatch):
        ragkit.open(tmp_path / "idx", embedder=other)
    with pytest.raises(EmbedderMismatch):
        ragkit.index(
            [corpus],
            tmp_path / "idx",
            cfg=IndexConfig(embed_model="/some/other/model"),
            embedder_factory=lambda c: other,
        )


def test_doc_type_and_collection_flags(corpus, index_with):
    s, ix = index_with(corpus, cfg=IndexConfig(doc_type="contract", collection="acme"))
    with ix.reader.duck() as store:
        # front matter wins over the flag; the others take the flag
        assert store.doc_types() == {"contract": 2, "policy": 1}
        assert store.collections() == {"acme": 3}


def test_interrupt_while_embedding_writes_nothing(corpus, index_with, fake, monkeypatch):
    _, ix = index_with(corpus)
    version = ix.reader.manifest.last_run.lance_version
    write(corpus, "notes/extra.md", "# Extra\n\nSomething new.\n")
    monkeypatch.setattr(fake, "encode", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        index_with(corpus)
    monkeypatch.undo()
    ix = ragkit.open(ix.path, embedder=fake)
    assert ix.reader.manifest.last_run.lance_version == version
    assert ix.reader.chunks.version == version


def test_file_that_turns_binary_loses_its_old_chunks(corpus, index_with):
    index_with(corpus)
    (corpus / "notes/meeting.txt").write_bytes(b"\x00\x00binary now")
    s, ix = index_with(corpus)
    assert s.skipped == 1 and s.total_documents == 2
    assert not paths_of(ix, "planning meeting Tuesday", strategy="lexical")
