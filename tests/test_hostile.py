"""Hostile and odd files (issue 16): each is skipped with a reason or indexed as well as it can be, never
fatal, and nothing else is lost."""

import base64
import os
import random

from ragkit import api
from ragkit.config import IndexConfig, QueryConfig
from ragkit.text import PROSE_MIN, word_share


def folder(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    rng = random.Random(1)
    (root / "policy.md").write_text("# Overtime\n\nOvertime is limited to ten hours per week.\n")
    (root / "blob.txt").write_text(base64.b64encode(rng.randbytes(30_000)).decode())
    (root / "dump.txt").write_text("\n".join(" ".join(f"{rng.randrange(256):02x}" for _ in range(16))
                                             for _ in range(300)))
    (root / "app.txt").write_text("var a=function(b){return b*2};" * 300)
    (root / "nul.txt").write_bytes(b"some text\x00with a NUL byte " * 20)
    (root / "latin1.txt").write_bytes("Überstunden müssen vorher genehmigt werden.".encode("latin-1"))
    (root / "broken.html").write_text("<html><body><h1>Broken<p>unclosed <b>paragraph text")
    (root / "front.md").write_text("---\ntitle: [unclosed\n---\n# Parking\n\nEvery employee gets a parking badge.\n")
    (root / "empty.md").write_text("")
    (root / "blank.txt").write_text("  \n\n\t \n")
    (root / "big.txt").write_text("Large text file. " * 80_000)  # 1.4 MB
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
    summary, reader = index_with(root, cfg=IndexConfig(max_file_size_mb=1.0))
    warnings = "\n".join(summary.warnings)
    for name, reason in (("blob.txt", "not prose: 0%"), ("dump.txt", "not prose: 1"), ("app.txt", "not prose: 0%"),
                         ("nul.txt", "binary file"), ("empty.md", "no text"), ("blank.txt", "no text"),
                         ("big.txt", "1.4 MB is over --max-file-size 1 MB"), ("loop", "a link to a folder"),
                         ("linked.md", "a link out of the folder")):
        assert f"skipped docs/{name}: {reason}" in warnings, name
    assert "docs/front.md: invalid YAML front matter" in warnings
    assert summary.skipped == 9 and summary.new == 5  # policy, latin1, broken, front, deep
    found = {p.path.split("/")[-1]: p for p in
             api.query(reader, "Überstunden parking badge unclosed paragraph sauna overtime",
                       QueryConfig(strategy="lexical", k=10)).passages}
    assert {"policy.md", "latin1.txt", "broken.html", "front.md", "deep.md"} <= set(found)
    assert "Überstunden müssen" in found["latin1.txt"].text  # Windows-1252 / Latin-1 decoded
    assert "unclosed paragraph text" in found["broken.html"].text  # malformed HTML: its text is kept
    assert "title:" not in found["front.md"].text  # the broken front matter is not indexed as text


def test_word_share_separates_prose_from_noise():
    assert word_share("The quick brown fox jumps over the lazy dog. Überstunden sind zu genehmigen.") > 0.9
    assert word_share("INTRODUCTION . . . . . . . . . 12 T-Cell Activation . . . . . 14") > 0.5  # dot leaders
    assert word_share(base64.b64encode(bytes(range(256)) * 40).decode()) < PROSE_MIN
    assert word_share("fn main() { let x = 5; println!(\"{x}\"); }") > PROSE_MIN  # code in prose documents
