"""Hostile and odd files (issue 16): each is skipped with a reason or indexed as well as it can be, never
fatal, and nothing else is lost."""

import base64
import os
import random

from ragkit.config import IndexConfig, QueryConfig
from ragkit.text import PROSE_MIN, word_share


def folder(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    rng = random.Random(1)
    (root / "policy.md").write_text("# Overtime\n\nOvertime is limited to ten hours per week.\n")
    (root / "blob.txt").write_text(base64.b64encode(rng.randbytes(30_000)).decode())
    (root / "dump.txt").write_text(
        "\n".join(" ".join(f"{rng.randrange(256):02x}" for _ in range(16)) for _ in range(300))
    )
    (root / "app.txt").write_text("var a=function(b){return b*2};" * 300)
    (root / "nul.txt").write_bytes(b"some text\x00with a NUL byte " * 20)
    (root / "latin1.txt").write_bytes("Überstunden müssen vorher genehmigt werden.".encode("latin-1"))
    (root / "broken.html").write_text("<html><body><h1>Broken<p>unclosed <b>paragraph text")
    (root / "front.md").write_text("---\ntitle: [unclosed\n---\n# Parking\n\nEvery employee gets a parking badge.\n")
    (root / "empty.md").write_text("")
    (root / "blank.txt").write_text("  \n\n\t \n")
    (root / "big.txt").write_text("Large text file. " * 80_000)  # 1.4 MB
    (root / "line.txt").write_text("word " * 200_000)  # 1 MB on one line, one word repeated
    deep = root.joinpath(*(f"d{i}" for i in range(60)))
    deep.mkdir(parents=True)
    (deep / "deep.md").write_text("# Deep\n\nA file sixty folders down mentions the sauna.\n")
    os.symlink(root, root / "loop")  # a link back up the tree
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# Elsewhere\n\nA file outside the folder.\n")
    os.symlink(outside, root / "linked.md")
    return root


def test_odd_files_are_skipped_with_reasons_or_indexed(tmp_path, index_with):
    root = folder(tmp_path)
    summary, ix = index_with(root, cfg=IndexConfig(max_file_size_mb=1.0))
    warnings = "\n".join(summary.warnings)
    for name, reason in (
        ("blob.txt", "not prose: 0%"),
        ("dump.txt", "not prose: 1"),
        ("app.txt", "not prose: 0%"),
        ("nul.txt", "binary file"),
        ("empty.md", "no text"),
        ("blank.txt", "no text"),
        ("big.txt", "1.4 MB is over --max-file-size 1 MB"),
        ("loop", "a link to a folder"),
        ("linked.md", "a link out of the folder"),
        ("line.txt", "not prose: the text repeats itself (its start compresses"),
    ):
        assert f"skipped docs/{name}: {reason}" in warnings, name
    assert "docs/front.md: invalid YAML front matter" in warnings
    assert summary.skipped == 10 and summary.new == 5  # policy, latin1, broken, front, deep
    found = {
        p.path.split("/")[-1]: p
        for p in ix.query(
            "Überstunden parking badge unclosed paragraph sauna overtime", QueryConfig(strategy="lexical", k=10)
        ).passages
    }
    assert {"policy.md", "latin1.txt", "broken.html", "front.md", "deep.md"} <= set(found)
    assert "Überstunden müssen" in found["latin1.txt"].text  # Windows-1252 / Latin-1 decoded
    assert "unclosed paragraph text" in found["broken.html"].text  # malformed HTML: its text is kept
    assert "title:" not in found["front.md"].text  # the broken front matter is not indexed as text


def test_repetition_separates_prose_from_a_repeated_phrase():
    from ragkit.text import REPEAT_MAX, repetition

    prose = " ".join(
        f"Paragraph {i}: overtime is limited to {i % 12} hours, Überstunden bis {i} Stunden." for i in range(400)
    )
    assert repetition(prose) < REPEAT_MAX / 2
    assert repetition("Large text file. " * 5000) > REPEAT_MAX and repetition("short " * 100) == 1.0


def test_word_share_separates_prose_from_noise():
    assert word_share("The quick brown fox jumps over the lazy dog. Überstunden sind zu genehmigen.") > 0.9
    assert word_share("INTRODUCTION . . . . . . . . . 12 T-Cell Activation . . . . . 14") > 0.5  # dot leaders
    assert word_share(base64.b64encode(bytes(range(256)) * 40).decode()) < PROSE_MIN
    assert word_share('fn main() { let x = 5; println!("{x}"); }') > PROSE_MIN  # code in prose documents


def test_unreadable_files_are_skipped_and_nothing_else_is_lost(tmp_path, index_with):
    """A file without read permission (for root too: no r bit at all) is skipped with the reason."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "policy.md").write_text("# Overtime\n\nOvertime is limited to ten hours per week.\n")
    secret = root / "secret.md"
    secret.write_text("# Secret\n\nNot for the index.\n")
    secret.chmod(0)
    try:
        summary, ix = index_with(root)
    finally:
        secret.chmod(0o644)
    assert summary.new == 1 and summary.skipped == 1
    assert any("secret.md: unreadable (no read permission)" in w for w in summary.warnings)


def test_files_deleted_or_changed_while_the_run_reads(tmp_path, index_with, monkeypatch):
    """A file deleted between finding and reading is skipped with the reason and what it held goes; a file
    changed since it was found is indexed as read, and the next run finds it unchanged."""
    from ragkit.ingest import pipeline

    root = tmp_path / "docs"
    root.mkdir()
    (root / "policy.md").write_text("# Overtime\n\nOvertime is limited to ten hours per week.\n")
    (root / "gone.md").write_text("# Gone\n\nThe sauna opens at six.\n")
    (root / "edit.md").write_text("# Edit\n\nParking badges are blue.\n")
    index_with(root)
    (root / "gone.md").write_text("# Gone\n\nThe sauna opens at seven.\n")
    (root / "edit.md").write_text("# Edit\n\nParking badges are green now.\n")
    found = pipeline.discover

    def racing(*args, **kwargs):
        files = found(*args, **kwargs)
        (root / "gone.md").unlink()  # deleted after the run found it
        (root / "edit.md").write_text("# Edit\n\nParking badges are red, as of this very moment.\n")
        return files

    monkeypatch.setattr(pipeline, "discover", racing)
    summary, ix = index_with(root)
    assert any("gone.md: deleted while the run read the folder" in w for w in summary.warnings)
    assert summary.removed == 1 and summary.changed == 1 and summary.total_documents == 2
    texts = [p.text for p in ix.query("parking badges sauna", QueryConfig(k=5)).passages]
    assert any("red, as of this very moment" in t for t in texts) and not any("sauna" in t for t in texts)
    monkeypatch.setattr(pipeline, "discover", found)
    again, _ = index_with(root)
    assert again.unchanged == 2 and again.changed == again.new == 0
